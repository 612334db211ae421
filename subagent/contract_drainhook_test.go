package subagent_test

// Drains that begin inside a start (subagent-contract.md §5.7 C39, C43,
// C44; map in CONTRACT_TESTS.md). Drain waits for in-flight starts, so a
// drain begun inside one runs on its own goroutine; the test continues the
// start once the drain has closed admission (subagent.SetDrainBegan).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// beginDrain starts rt.Drain on its own goroutine and returns once the
// drain has closed admission; wait returns the drain's error.
func beginDrain(ctx context.Context, rt *subagent.Runtime, began chan struct{}) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- rt.Drain(ctx) }()
	<-began
	return func() error { return <-done }
}

// drainBegan returns a channel closed when rt's first drain has closed
// admission.
func drainBegan(rt *subagent.Runtime) chan struct{} {
	began := make(chan struct{})
	var once sync.Once
	subagent.SetDrainBegan(rt, func() { once.Do(func() { close(began) }) })
	return began
}

// C43, C83: a drain begun when the start edge is published refuses the start
// DRAINING before its prompt reaches the inbox (no inbox insert is ever
// appended to the child's log); only the parent remains, and the parent
// gets no notice — neither a logged message nor an injected inbox item.
func TestDrainBegunAtPublicationRefusesTheStart(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "never").model())
	began := drainBegan(st.Runtime)
	parent := st.NewParent(t, "parent")
	var (
		mu      sync.Mutex
		inserts []string
	)
	unobserve := st.Sessions.Observe(&session.Observer{Appended: func(s *session.Session, ev session.Event) {
		if ev.Type != session.TypeInboxSpliced {
			return
		}
		d, _ := session.DecodeData[session.InboxSplicedData](ev)
		mu.Lock()
		for _, m := range d.Inserted {
			inserts = append(inserts, s.ID()+": "+session.JoinText(m.Content, "\n"))
		}
		mu.Unlock()
	}})
	defer unobserve()
	var wait func() error
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart && wait == nil {
			wait = beginDrain(ctx, st.Runtime, began)
		}
	})
	_, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c43", "child"))
	if !subagent.HasCode(err, subagent.CodeDraining) {
		t.Fatalf("err = %v", err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	gone(t, st, "c43")
	mu.Lock()
	if len(inserts) != 0 {
		t.Errorf("inbox inserts = %q: the refused prompt reached the child's inbox or a notice the parent's", inserts)
	}
	mu.Unlock()
	// C83: a start rolled back by a drain sends no notice.
	if got := userTexts(parent.Session().MustEvents(), ""); len(got) != 0 {
		t.Errorf("parent messages = %q", got)
	}
	if got := inserted(parent.Session().MustEvents()); len(got) != 0 {
		t.Errorf("parent inbox inserts = %d, want none", len(got))
	}
	if n := len(st.Agents.List()); n != 1 {
		t.Errorf("agents = %d, want only the parent", n)
	}
}

// C39, C44: a drain begun in the creation window waits for that
// materialization, which is refused DRAINING and rolled back before the
// drain returns. The start stays in its creation window until the drain
// either reports that it waits for work in flight or returns; "drain" is
// recorded by the drain's own goroutine when Drain returns, so a drain
// that does not wait for the start records it before "disposed".
func TestDrainBegunInTheCreationWindowWaitsForTheRollback(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "never").model())
	lc := record(st.Runtime)
	began := drainBegan(st.Runtime)
	waiting := newSignal()
	subagent.SetWorkWaiting(st.Runtime, waiting.fire)
	parent := st.NewParent(t, "parent")
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	done := make(chan error, 1)
	unobserve := st.Sessions.Observe(&session.Observer{
		Created: func(s *session.Session, _ bool) {
			if s.ID() != "c44" {
				return
			}
			returned := make(chan struct{})
			go func() {
				err := st.Runtime.Drain(ctx)
				note("drain")
				close(returned)
				done <- err
			}()
			<-began
			select {
			case <-waiting.ch:
			case <-returned:
			case <-ctx.Done():
			}
		},
		Removed: func(s *session.Session) {
			if s.ID() == "c44" {
				note("disposed")
			}
		},
	})
	defer unobserve()
	_, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c44", "child"))
	if !subagent.HasCode(err, subagent.CodeDraining) {
		t.Fatalf("err = %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := order
	mu.Unlock()
	if len(got) != 2 || got[0] != "disposed" || got[1] != "drain" {
		t.Errorf("order = %v, want [disposed drain]", got)
	}
	gone(t, st, "c44")
	if evs := eventsOf(lc, "c44"); len(evs) != 0 {
		t.Errorf("lifecycle of an unpublished child: %+v", evs)
	}
}

// C45, C46: a follow-up accepted before a later drain is enqueued first
// and then cancelled by the drain; it never becomes a logged user message.
func TestFollowupAcceptedBeforeADrainIsCancelledUnlogged(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, ps := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c45", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	msgID, err := st.Runtime.Followup(ctx, parent, "c45", text("queued"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Runtime.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c45", 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, "c45")
	var order []string
	for _, ev := range evs {
		if ev.Type != session.TypeInboxSpliced {
			continue
		}
		d, _ := session.DecodeData[session.InboxSplicedData](ev)
		for _, m := range d.Inserted {
			if m.ID == msgID {
				order = append(order, "enqueue")
			}
		}
		if len(order) == 1 && len(d.Inserted) == 0 && d.RemovedCount != nil && d.Target == session.InboxNextTurn {
			order = append(order, "cancel:"+d.Outcome)
		}
	}
	if len(order) != 2 || order[0] != "enqueue" || order[1] == "cancel:" {
		t.Errorf("inbox order = %v, want the enqueue then its cancellation", order)
	}
	if got := userTexts(evs, ""); len(got) != 1 {
		t.Errorf("user texts = %q: the cancelled follow-up was logged", got)
	}
}

// C69: a second turn held at pre-step and then drained ends the epoch
// "aborted"; the injected notice quotes the first turn's answer.
func TestDrainedSecondTurnIsNoticedAsStoppedWithTheEarlierAnswer(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	entered := make(chan struct{}, 1)
	held := func(ctx context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
		if a.Options().ScriptKey == "c69" && s.Turn == 2 {
			entered <- struct{}{}
			<-ctx.Done()
			return agent.Enter, context.Cause(ctx)
		}
		return agent.Enter, nil
	}
	st, _, _, _ := faultStack(t, newScript().add("c69", g.reply("the answer")).model(), func(c *subagenttest.Config) {
		c.ChildPreStep = []agent.PreStepHook{held}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c69", "c69")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if _, err := st.Runtime.Followup(ctx, parent, "c69", text("second task")); err != nil {
		t.Fatal(err)
	}
	g.open()
	<-entered
	if err := st.Runtime.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, "c69", 1)
	if ends[0].StopReason != "aborted" {
		t.Errorf("end = %+v", ends[0])
	}
	want := "Background subagent c69 was stopped before it finished.\nIts closing message:\nthe answer"
	var got []string
	for _, ev := range parent.Session().MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			for _, m := range d.Inserted {
				got = append(got, session.JoinText(m.Content, "\n"))
			}
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("notices = %q, want %q", got, want)
	}
}

// C38: a scoped drain finds a continuable descendant whose one-shot
// intermediate parent is already disposed (ancestry is fixed at
// materialization).
func TestScopedDrainFindsADescendantOfADisposedOneShot(t *testing.T) {
	ctx := testCtx(t)
	gl := newGate()
	defer gl.open()
	sc := newScript().add("leaf", gl.reply("never"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	sc.add("mid", func(context.Context) ([]session.Chunk, error) {
		mid := st.Live(midID(st))
		if _, _, err := st.Runtime.StartContinuable(ctx, spec(mid, "c38-leaf", "leaf")); err != nil {
			return nil, err
		}
		return subagenttest.Text("mid done"), nil
	})
	run, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Label: "mid", Prompt: text("delegate"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	gl.waitEntered(t, ctx)
	if st.Live(run.ID) != nil || !st.Runtime.Resident("c38-leaf") {
		t.Fatal("want the one-shot gone and the leaf resident")
	}
	if err := st.Runtime.DrainDescendants(ctx, parent); err != nil {
		t.Fatal(err)
	}
	if ends := lc.waitEnds(t, ctx, "c38-leaf", 1); ends[0].StopReason != "aborted" {
		t.Errorf("leaf end = %+v", ends[0])
	}
	gone(t, st, "c38-leaf")
}

// midID returns the id of the one live one-shot child of "parent".
func midID(st *subagenttest.Stack) string {
	for _, a := range st.Agents.List() {
		if a.Session().Header().ParentSession == "parent" {
			return a.ID()
		}
	}
	return ""
}

// C48: a child whose Followup fails (its agent closed under the runtime)
// fails the start with that error and is rolled back.
func TestChildFollowupFailureFailsTheStart(t *testing.T) {
	ctx := testCtx(t)
	st, _, _, _ := faultStack(t, newScript().model(), func(c *subagenttest.Config) {
		c.WrapFactory = func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				a, err := next(s, spec)
				if err == nil && spec.Label == "closed" {
					err = a.Close(context.Background())
				}
				return a, err
			}
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	_, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c48", "closed"))
	if !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("err = %v, want the agent's own error", err)
	}
	gone(t, st, "c48")
	evs := eventsOf(lc, "c48")
	if len(evs) != 2 || evs[1].Type != subagent.EventEnd || evs[1].StopReason != "aborted" {
		t.Errorf("lifecycle = %+v", evs)
	}
}

// C58–C60: an accepted follow-up discarded by a cancellation that drops
// the inbox (a user's cancel of the child's turn) is never logged and does
// not keep the Activation resident: the child still settles.
func TestDiscardedAcceptedFollowupLetsTheChildSettle(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, ps := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c58", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if _, err := st.Runtime.Followup(ctx, parent, "c58", text("discarded")); err != nil {
		t.Fatal(err)
	}
	st.Live("c58").Cancel(session.AbortReason{Kind: "user"}, false)
	ends := lc.waitEnds(t, ctx, "c58", 1)
	if ends[0].StopReason != "aborted" {
		t.Errorf("end = %+v", ends[0])
	}
	gone(t, st, "c58")
	_, evs := persistedEvents(t, ctx, durable{ps}, "c58")
	if got := userTexts(evs, ""); len(got) != 1 {
		t.Errorf("user texts = %q: the discarded follow-up was logged", got)
	}
}

// C80: a teardown notice injected into a parent that is then disposed is
// cancelled with it: the splices are insert-then-remove and the resumed
// parent never receives the notice.
func TestInjectedNoticeDiesWithItsDisposedParent(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never")).text("child", "resumed")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	if err := st.Runtime.DrainDescendants(ctx, st.Live(c)); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, g, 1)
	if err := st.Runtime.DrainChildren(ctx, parent, c); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, c, 1)
	if _, err := st.Runtime.Followup(ctx, parent, c, text("resume")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, c, 2)
	_, evs := persistedEvents(t, ctx, durable{ps}, c)
	var splices []string
	for _, ev := range evs {
		if ev.Type != session.TypeInboxSpliced {
			continue
		}
		d, _ := session.DecodeData[session.InboxSplicedData](ev)
		if len(d.Inserted) == 1 && d.Inserted[0].Source.Kind == "subagent-settled" {
			splices = append(splices, "inserted")
		} else if len(splices) == 1 && len(d.Inserted) == 0 && d.RemovedCount != nil && *d.RemovedCount == 1 {
			splices = append(splices, "removed")
		}
	}
	if strings.Join(splices, ",") != "inserted,removed" {
		t.Errorf("notice splices = %v, want inserted then removed", splices)
	}
	if got := userTexts(evs, "subagent-settled"); len(got) != 0 {
		t.Errorf("the resumed parent received the notice: %q", got)
	}
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|resume" {
		t.Errorf("user texts = %s", got)
	}
}

// cancelCall is one cancellation the runtime issued to an activation.
type cancelCall struct {
	id        string
	cause     string
	keepInbox bool
}

// cancels records every cancellation rt issues to an activation
// (subagent.SetCancelHook) and signals each on seen.
type cancels struct {
	mu    sync.Mutex
	calls []cancelCall
	seen  chan cancelCall
}

func recordCancels(rt *subagent.Runtime) *cancels {
	c := &cancels{seen: make(chan cancelCall, 64)}
	subagent.SetCancelHook(rt, func(id string, cause session.AbortReason, keepInbox bool) {
		call := cancelCall{id, cause.Kind, keepInbox}
		c.mu.Lock()
		c.calls = append(c.calls, call)
		c.mu.Unlock()
		c.seen <- call
	})
	return c
}

func (c *cancels) of(id string) []cancelCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cancelCall
	for _, call := range c.calls {
		if call.id == id {
			out = append(out, call)
		}
	}
	return out
}

// C103: once a scoped drain has cancelled a descendant, an interrupt of it
// (by the user or by an ancestor) is an accepted no-op: the disposal is
// open, so no second cancel reaches the agent. The drain is held between
// its synchronous cancel and its disposals by an unrelated cold resume
// in flight (a drain waits for in-flight materializations), which the
// test holds at Durable.Load.
func TestInterruptAfterAScopedDrainBeganIsNoSecondCancel(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	sc := newScript().add("child", g.reply("never")).text("other", "first", "second")
	st, _, f, _ := faultStack(t, sc.model(), nil)
	lc := record(st.Runtime)
	cs := recordCancels(st.Runtime)
	parent := st.NewParent(t, "parent")
	other := st.NewParent(t, "other-parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(other, "s103", "other")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "s103", 1)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c103", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)

	h := newHold()
	defer h.open()
	f.setLoad(func(_ context.Context, id string) error {
		if id == "s103" {
			return h.hook()
		}
		return nil
	})
	resumed := make(chan error, 1)
	go func() {
		_, err := st.Runtime.Followup(ctx, other, "s103", text("again"))
		resumed <- err
	}()
	h.waitEntered(t, ctx)
	drained := make(chan error, 1)
	go func() { drained <- st.Runtime.DrainDescendants(ctx, parent) }()
	select {
	case call := <-cs.seen:
		if call != (cancelCall{"c103", "parent", false}) {
			t.Fatalf("first cancel = %+v, want the drain's", call)
		}
	case <-ctx.Done():
		t.Fatal("the drain never cancelled the child")
	}
	for _, auth := range []subagent.Authority{subagent.UserAuthority("parent"), subagent.AncestorAuthority(parent)} {
		if err := st.Runtime.Interrupt("c103", auth); err != nil {
			t.Errorf("interrupt (%s) after the drain began: %v", auth.Kind, err)
		}
	}
	if got := cs.of("c103"); len(got) != 1 {
		t.Errorf("cancels of c103 before the disposal = %+v, want only the drain's", got)
	}
	h.open()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if ends := lc.waitEnds(t, ctx, "c103", 1); ends[0].StopReason != "aborted" {
		t.Errorf("end = %+v", ends[0])
	}
	for _, call := range cs.of("c103") {
		if call.keepInbox || call.cause != "parent" {
			t.Errorf("cancel %+v is an interrupt's, not the drain's", call)
		}
	}
	lc.waitEnds(t, ctx, "s103", 2)
}
