package subagent_test

// Continuation contract tests for publication, selected-child drains and
// teardown failures (subagent-contract.md §5.7; map in CONTRACT_TESTS.md).
// Every failure is injected at the storage boundary (faultStack) or by a
// publisher; every wait is on a gate, a hold or a lifecycle event.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// eventsOf returns the lifecycle events of child id.
func eventsOf(lc *lifecycle, id string) []subagent.LifecycleEvent {
	var out []subagent.LifecycleEvent
	for _, ev := range lc.all() {
		if ev.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// gone fails the test when id is still registered, resident or live.
func gone(t *testing.T, st *subagenttest.Stack, id string) {
	t.Helper()
	if st.Live(id) != nil || st.Runtime.Resident(id) {
		t.Errorf("%s is still registered or resident", id)
	}
	if _, ok := st.Sessions.Get(id); ok {
		t.Errorf("%s's session is still live", id)
	}
}

func spec(parent *agent.Agent, id, label string) subagent.ContinuableSpec {
	return subagent.ContinuableSpec{Provider: "spawn", Label: label, ChildID: id, Prompt: text("task: " + label), Parent: parent}
}

// C8: a failing start publication rejects the start, rolls it back and
// emits no subagent/end; a drain afterwards has nothing to wait for.
func TestStartPublicationFailureRollsBackWithoutAnEnd(t *testing.T) {
	ctx := testCtx(t)
	m := newScript().text("child", "never asked").model()
	st, _ := durableStack(t, t.TempDir(), m)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	tests := []struct {
		name string
		fn   func(subagent.LifecycleEvent) error
	}{
		{"error", func(subagent.LifecycleEvent) error { return errors.New("publish boom") }},
		{"panic", func(subagent.LifecycleEvent) error { panic("publish boom") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unsub := st.Runtime.OnPublish(tt.fn)
			defer unsub()
			id := "c8-" + tt.name
			_, _, err := st.Runtime.StartContinuable(ctx, spec(parent, id, "child"))
			if !subagent.HasCode(err, subagent.CodeStartPublicationFailed) ||
				!strings.Contains(err.Error(), `subagent "`+id+`" start publication failed`) || !strings.Contains(err.Error(), "publish boom") {
				t.Fatalf("err = %v", err)
			}
			if evs := eventsOf(lc, id); len(evs) != 0 {
				t.Errorf("lifecycle events of a failed publication: %+v", evs)
			}
			gone(t, st, id)
		})
	}
	if err := st.Runtime.Drain(ctx); err != nil {
		t.Errorf("drain after failed publications: %v", err)
	}
	if n := len(m.Requests("child")); n != 0 {
		t.Errorf("model requests = %d", n)
	}
}

// A publisher sees the start edge before the listeners and a successful
// publication reaches them (C8, the passing side).
func TestStartPublicationRunsBeforeTheListeners(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "ok").model())
	var order []string
	st.Runtime.OnPublish(func(ev subagent.LifecycleEvent) error {
		order = append(order, "publish "+ev.Type)
		return nil
	})
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart {
			order = append(order, "listen "+ev.Type)
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	if got := strings.Join(order, ","); got != "publish subagent/start,listen subagent/start" {
		t.Errorf("order = %s", got)
	}
}

// Go difference (#87, #102, §2.8): a subagent/start listener's panic is
// contained and logged; the start succeeds and later listeners still hear
// every event.
func TestStartListenerPanicIsContainedAndTheChildRuns(t *testing.T) {
	ctx := testCtx(t)
	st, _, _, logs := faultStack(t, newScript().text("child", "fine").model(), nil)
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart {
			panic("listener boom")
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	ends := lc.waitEnds(t, ctx, id, 1)
	if ends[0].StopReason != "completed" {
		t.Errorf("end = %+v", ends[0])
	}
	if !strings.Contains(logs.String(), "subagent: subagent/start listener threw: listener boom") {
		t.Errorf("log = %s", logs)
	}
}

// C34: a selected-child drain cancels only the target and its owned
// forest, with cause parent, grandchild first; the sibling keeps running
// and admission stays open.
func TestDrainChildrenTakesDownOnlyTheSelectedChildAndItsForest(t *testing.T) {
	ctx := testCtx(t)
	gc, gg, gs := newGate(), newGate(), newGate()
	defer gs.open()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never")).add("sib", gs.reply("sib done"))
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	sib, _ := startChild(t, ctx, st.Runtime, parent, "sib")
	gs.waitEntered(t, ctx)

	if err := st.Runtime.DrainChildren(ctx, parent, c, c, "no-such-child"); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range lc.all() {
		if ev.Type == subagent.EventEnd {
			order = append(order, ev.ID)
		}
	}
	if len(order) != 2 || order[0] != g || order[1] != c {
		t.Errorf("ends = %v, want grandchild %s then child %s", order, g, c)
	}
	for _, id := range []string{g, c} {
		gone(t, st, id)
		_, evs := persistedEvents(t, ctx, durable{ps}, id)
		for _, ev := range evs {
			if ev.Type == session.TypeTurnEnd {
				d, _ := session.DecodeData[session.TurnEndData](ev)
				if d.Reason.Kind != "aborted" || d.Reason.Reason == nil || d.Reason.Reason.Kind != "parent" {
					t.Errorf("%s turn end = %+v, want aborted by parent", id, d.Reason)
				}
			}
		}
	}
	if !st.Runtime.Resident(sib) || st.Live(sib).Status() != agent.StatusRunning {
		t.Error("the sibling was touched")
	}
	// No admission was closed: the drained child cold-resumes.
	if _, err := st.Runtime.Followup(ctx, parent, c, text("again")); err != nil {
		t.Errorf("follow-up after a selected drain: %v", err)
	}
	lc.waitEnds(t, ctx, c, 2)
}

// C36, C37, #90: who may drain selected children.
func TestDrainChildrenAuthority(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	defer gc.open()
	defer gg.open()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	parent := st.NewParent(t, "parent")
	stranger := st.NewParent(t, "stranger")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	tests := []struct {
		name   string
		parent *agent.Agent
		ids    []string
		want   string
	}{
		{"through another live parent", stranger, []string{c}, `subagent "` + c + `" is not a direct child of agent "stranger"`},
		{"a grandchild is not a direct child", parent, []string{g}, `subagent "` + g + `" is not a direct child of agent "parent"`},
		{"one bad id refuses the whole call", parent, []string{c, g}, `subagent "` + g + `" is not a direct child of agent "parent"`},
		{"stale parent identity", agent.New(parent.Session(), agent.Options{}), []string{c}, "selected child teardown requires the exact live parent agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.Runtime.DrainChildren(ctx, tt.parent, tt.ids...)
			if !subagent.HasCode(err, subagent.CodeUnauthorized) || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if !st.Runtime.Resident(c) || !st.Runtime.Resident(g) || st.Live(c).Status() != agent.StatusRunning {
		t.Error("a refused drain took something down")
	}
	t.Run("no manager is a no-op", func(t *testing.T) {
		rt := subagent.New(subagent.Options{Sessions: session.NewStore(nil)})
		if err := rt.DrainChildren(ctx, nil, "x"); err != nil {
			t.Error(err)
		}
	})
}

// C35: a selected child whose handle disposal fails is still released and
// the drain reports ACTIVATION_TEARDOWN_FAILED.
func TestDrainChildrenDisposeFailureIsReportedAndTheChildReleased(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, ps, f, _ := faultStack(t, newScript().add("child", g.reply("never")).model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	f.setRelease("c35", errors.New("handle dispose boom"))
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c35", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	err := st.Runtime.DrainChildren(ctx, parent, "c35")
	if !subagent.HasCode(err, subagent.CodeActivationTeardownFailed) ||
		!strings.HasPrefix(err.Error(), "continuable subagent teardown failed for 1 selected activation(s): ") ||
		!strings.Contains(err.Error(), `subagent "c35" activation handle disposal failed: handle dispose boom`) {
		t.Fatalf("err = %v", err)
	}
	gone(t, st, "c35")
	ends := lc.waitEnds(t, ctx, "c35", 1)
	if ends[0].StopReason != "error" || ends[0].LastAssistantMessage != nil {
		t.Errorf("end = %+v, want error without output", ends[0])
	}
	if _, _, err := (durable{ps}).Inspect(ctx, "c35"); err != nil {
		t.Errorf("session did not survive: %v", err)
	}
}

// C41, C54: a scoped drain whose descendant's handle disposal fails
// reports ACTIVATION_TEARDOWN_FAILED for the scope and still releases the
// branch; the epoch ends "error" without output.
func TestScopedDrainTeardownFailureReleasesTheBranch(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, _, f, _ := faultStack(t, newScript().add("child", g.reply("never")).model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	f.setRelease("c41", errors.New("handle dispose boom"))
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c41", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	err := st.Runtime.DrainDescendants(ctx, parent)
	if !subagent.HasCode(err, subagent.CodeActivationTeardownFailed) ||
		!strings.HasPrefix(err.Error(), "continuable subagent teardown failed for 1 scoped activation(s): ") ||
		!strings.Contains(err.Error(), "handle dispose boom") {
		t.Fatalf("err = %v", err)
	}
	gone(t, st, "c41")
	if ends := lc.waitEnds(t, ctx, "c41", 1); ends[0].StopReason != "error" || ends[0].LastAssistantMessage != nil {
		t.Errorf("end = %+v", ends[0])
	}
}

// C92: a grandchild's disposal failure fails the manager drain; the other
// branch is released and every session survives on disk.
func TestGrandchildDisposeFailureFailsTheDrainAndReleasesTheOtherBranch(t *testing.T) {
	ctx := testCtx(t)
	gc, gg, go2 := newGate(), newGate(), newGate()
	defer gc.open()
	defer gg.open()
	defer go2.open()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never")).add("other", go2.reply("never"))
	st, ps, f, _ := faultStack(t, sc.model(), nil)
	parent := st.NewParent(t, "parent")
	f.setRelease("g92", errors.New("grandchild dispose boom"))
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c92", "child")); err != nil {
		t.Fatal(err)
	}
	gc.waitEntered(t, ctx)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(st.Live("c92"), "g92", "grand")); err != nil {
		t.Fatal(err)
	}
	gg.waitEntered(t, ctx)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "o92", "other")); err != nil {
		t.Fatal(err)
	}
	go2.waitEntered(t, ctx)

	err := st.Runtime.Drain(ctx)
	if !subagent.HasCode(err, subagent.CodeActivationTeardownFailed) ||
		!strings.HasPrefix(err.Error(), "continuable subagent teardown failed for 1 activation(s): ") ||
		!strings.Contains(err.Error(), `subagent "c92" child teardown failed: `) || !strings.Contains(err.Error(), "grandchild dispose boom") {
		t.Fatalf("err = %v", err)
	}
	for _, id := range []string{"c92", "g92", "o92"} {
		gone(t, st, id)
		if _, _, err := (durable{ps}).Inspect(ctx, id); err != nil {
			t.Errorf("session %s did not survive: %v", id, err)
		}
	}
}

// C73, C30: a handle disposal failing at normal settlement is logged, the
// epoch ends "error" and the parent hears "failed … no closing message".
func TestSettlementDisposeFailureIsLoggedAndNoticedAsFailed(t *testing.T) {
	ctx := testCtx(t)
	st, _, f, logs := faultStack(t, newScript().text("child", "the answer").text("main", "noted").model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	f.setRelease("c73", errors.New("handle dispose boom"))
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c73", "child")); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, "c73", 1)
	if ends[0].StopReason != "error" || ends[0].LastAssistantMessage != nil {
		t.Errorf("end = %+v", ends[0])
	}
	waitIdle(t, ctx, parent)
	notices := userTexts(parent.Session().MustEvents(), "subagent-settled")
	if want := "Background subagent c73 failed before it finished.\nIt left no closing message."; len(notices) != 1 || notices[0] != want {
		t.Errorf("notices = %q, want %q", notices, want)
	}
	// The warning follows the end edge; a drain waits for the settlement.
	if err := st.Runtime.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, `subagent \"c73\" activation teardown failed`) || !strings.Contains(l, "handle dispose boom") {
		t.Errorf("log = %s", l)
	}
	gone(t, st, "c73")
}

// C29: a failing final flush is a logged warning; the child still settles
// "completed" with its output and its parent is told.
func TestFailingFinalFlushIsAWarningAndTheChildCompletes(t *testing.T) {
	ctx := testCtx(t)
	st, _, f, logs := faultStack(t, newScript().text("child", "the answer").text("main", "noted").model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	f.setFlush("c29", func() error { return errors.New("flush boom") })
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c29", "child")); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, "c29", 1)
	if ends[0].StopReason != "completed" || session.JoinText(ends[0].LastAssistantMessage, "") != "the answer" {
		t.Errorf("end = %+v", ends[0])
	}
	if l := logs.String(); !strings.Contains(l, `subagent \"c29\" best-effort final session flush failed; the persisted state may be unavailable or stale on resume: flush boom`) {
		t.Errorf("log = %s", l)
	}
	waitIdle(t, ctx, parent)
	if got := userTexts(parent.Session().MustEvents(), "subagent-settled"); len(got) != 1 || !strings.HasSuffix(got[0], "Its closing message:\nthe answer") {
		t.Errorf("notices = %q", got)
	}
}

// C93: while a child's Activation is being disposed, a start under it is
// refused ACTIVATION_CLOSING and leaves nothing behind.
func TestStartUnderADisposingParentIsActivationClosing(t *testing.T) {
	ctx := testCtx(t)
	st, _, f, _ := faultStack(t, newScript().text("child", "done").model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	h := newHold()
	defer h.open()
	f.setFlush("c93", h.hook)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c93", "child")); err != nil {
		t.Fatal(err)
	}
	h.waitEntered(t, ctx) // settlement is disposing c93, its agent still registered
	child := st.Live("c93")
	if child == nil {
		t.Fatal("child left the registry before its final flush")
	}
	_, _, err := st.Runtime.StartContinuable(ctx, spec(child, "g93", "grand"))
	if !subagent.HasCode(err, subagent.CodeActivationClosing) || err.Error() != `subagent parent "c93" is being disposed; the child was not established` {
		t.Errorf("err = %v", err)
	}
	gone(t, st, "g93")
	if evs := eventsOf(lc, "g93"); len(evs) != 0 {
		t.Errorf("lifecycle of the refused child: %+v", evs)
	}
	h.open()
	lc.waitEnds(t, ctx, "c93", 1)
}

// C25: a follow-up that races the child's final disposal waits for it and
// then cold-resumes the child; the message lands in a second epoch. The
// disposal is held at its final flush (holding the child's lock) until the
// follow-up waits for that lock, so the follow-up always meets the
// disposal in progress.
func TestFollowupRacingFinalDisposalColdResumes(t *testing.T) {
	ctx := testCtx(t)
	st, ps, f, _ := faultStack(t, newScript().text("child", "first answer", "second answer").model(), nil)
	// Armed once the disposal holds the lock: before that, the settlement
	// itself may wait for the lock the start still holds.
	var armed atomic.Bool
	waiting := newSignal()
	subagent.SetLockWaiting(st.Runtime, func(id string) {
		if id == "c25" && armed.Load() {
			waiting.fire()
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	h := newHold()
	defer h.open()
	f.setFlush("c25", h.hook)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c25", "child")); err != nil {
		t.Fatal(err)
	}
	h.waitEntered(t, ctx) // disposal holds the child's lock
	armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := st.Runtime.Followup(ctx, parent, "c25", text("late message"))
		done <- err
	}()
	waiting.wait(t, ctx, "the follow-up waiting for the disposing child's lock")
	h.open()
	if err := <-done; err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	ends := lc.waitEnds(t, ctx, "c25", 2)
	if got := session.JoinText(ends[1].LastAssistantMessage, ""); got != "second answer" {
		t.Errorf("second epoch output = %q", got)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "c25")
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|late message" {
		t.Errorf("user texts = %s", got)
	}
}

// C23: an abort while the cold inspection is pending rejects with the
// caller's exact abort reason.
func TestFollowupAbortDuringInspectionRejectsWithTheAbortReason(t *testing.T) {
	ctx := testCtx(t)
	st, _, f, _ := faultStack(t, newScript().text("child", "ok").model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c23", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c23", 1)
	reason := errors.New("caller gave up")
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.setInspect(func(ictx context.Context, id string) error {
		cancel(reason)
		<-ictx.Done()
		return ictx.Err()
	})
	_, err := st.Runtime.Followup(actx, parent, "c23", text("hi"))
	if err != reason {
		t.Errorf("err = %v, want the abort reason itself", err)
	}
	gone(t, st, "c23")
}

// C47: a parent replaced while its child is being cold-resumed is refused
// at submission; the message is never logged and the epoch rolls back.
func TestParentReplacedDuringColdResumeIsUnauthorized(t *testing.T) {
	ctx := testCtx(t)
	st, ps, f, _ := faultStack(t, newScript().text("child", "ok").model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c47", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c47", 1)
	f.setLoad(func(_ context.Context, id string) error {
		st.Agents.Unregister(parent)
		st.Register(t, parent.Session())
		return nil
	})
	_, err := st.Runtime.Followup(ctx, parent, "c47", text("lost message"))
	want := `subagent "c47" delivery requires the exact live parent agent`
	if !subagent.HasCode(err, subagent.CodeUnauthorized) || err.Error() != want {
		t.Fatalf("err = %v", err)
	}
	gone(t, st, "c47")
	_, evs := persistedEvents(t, ctx, durable{ps}, "c47")
	if got := userTexts(evs, ""); len(got) != 1 {
		t.Errorf("user texts = %q: the refused message was logged", got)
	}
	if ends := lc.waitEnds(t, ctx, "c47", 2); ends[1].StopReason != "aborted" {
		t.Errorf("rolled-back epoch end = %+v", ends[1])
	}
}

// C24: a SubagentError from materialization (the factory) propagates as
// the same error value.
func TestColdResumeMaterializationSubagentErrorPropagates(t *testing.T) {
	ctx := testCtx(t)
	refusal := subagent.NewError(subagent.CodeActivationSetupRevoked, "setup revoked by the host")
	st, _, _, _ := faultStack(t, newScript().text("child", "ok").model(), func(c *subagenttest.Config) {
		c.WrapFactory = func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				if !spec.Fresh {
					return nil, refusal
				}
				return next(s, spec)
			}
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c24", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c24", 1)
	if _, err := st.Runtime.Followup(ctx, parent, "c24", text("hi")); err != refusal {
		t.Errorf("err = %v, want the factory's own error", err)
	}
	gone(t, st, "c24")
}

// C57: every drain cancels the child's running turn before its final
// flush: when the flush is asked for, the turn has ended "aborted" (cause
// parent) in the log the flush writes.
func TestDrainCancelsTheRunningTurnBeforeTheFinalFlush(t *testing.T) {
	tests := []struct {
		name  string
		drain func(ctx context.Context, st *subagenttest.Stack, parent *agent.Agent) error
	}{
		{"manager drain", func(ctx context.Context, st *subagenttest.Stack, _ *agent.Agent) error { return st.Runtime.Drain(ctx) }},
		{"scoped drain", func(ctx context.Context, st *subagenttest.Stack, p *agent.Agent) error {
			return st.Runtime.DrainDescendants(ctx, p)
		}},
		{"selected child", func(ctx context.Context, st *subagenttest.Stack, p *agent.Agent) error {
			return st.Runtime.DrainChildren(ctx, p, "c57")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			g := newGate()
			defer g.open()
			st, _, f, _ := faultStack(t, newScript().add("child", g.reply("never")).model(), nil)
			lc := record(st.Runtime)
			parent := st.NewParent(t, "parent")
			if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c57", "child")); err != nil {
				t.Fatal(err)
			}
			g.waitEntered(t, ctx)
			child := st.Live("c57")
			var atFlush []string
			f.setFlush("c57", func() error {
				for _, ev := range child.Session().MustEvents() {
					if ev.Type == session.TypeTurnEnd {
						d, _ := session.DecodeData[session.TurnEndData](ev)
						cause := ""
						if d.Reason.Reason != nil {
							cause = d.Reason.Reason.Kind
						}
						atFlush = append(atFlush, d.Reason.Kind+":"+cause)
					}
				}
				return nil
			})
			if err := tt.drain(ctx, st, parent); err != nil {
				t.Fatal(err)
			}
			lc.waitEnds(t, ctx, "c57", 1)
			if strings.Join(atFlush, ",") != "aborted:parent" {
				t.Errorf("turn ends at the final flush = %v, want [aborted:parent]", atFlush)
			}
		})
	}
}

// C52: a continuable child whose final step is cut off by the token limit
// ends "max-tokens" and its end edge carries the last non-empty assistant
// message, tool call included (§2.9), whether the cut-off step is the one
// with the text and the call or a usage-only step after it.
func TestContinuableMaxTokensEndEdgeKeepsTheLastNonEmptyMessage(t *testing.T) {
	step1 := []session.Chunk{
		{Type: session.ChunkText, Text: "partial one"},
		{Type: session.ChunkToolCall, Index: 0, ID: "t1", Name: "send_message", Arguments: `{}`},
	}
	tests := []struct {
		name   string
		finish string
		then   []session.Chunk
	}{
		{"tool-only final step", model.FinishLength, nil},
		{"usage-only step after a text step", model.FinishToolCalls, []session.Chunk{{Type: session.ChunkFinish, Finish: model.FinishLength}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			sc := newScript().add("long", func(context.Context) ([]session.Chunk, error) {
				return append(slices.Clone(step1), session.Chunk{Type: session.ChunkFinish, Finish: tt.finish}), nil
			}).add("long", func(context.Context) ([]session.Chunk, error) { return tt.then, nil })
			st, _, _, _ := faultStack(t, sc.model(), nil)
			lc := record(st.Runtime)
			parent := st.NewParent(t, "parent")
			if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c52", "long")); err != nil {
				t.Fatal(err)
			}
			ends := lc.waitEnds(t, ctx, "c52", 1)
			var got []string
			for _, b := range ends[0].LastAssistantMessage {
				if b.Type == "text" {
					got = append(got, "text:"+b.Text)
				} else {
					got = append(got, b.Type+":"+b.ID)
				}
			}
			if ends[0].StopReason != "max-tokens" || strings.Join(got, ",") != "text:partial one,tool-call:t1" {
				t.Errorf("end = %s %v, want max-tokens [text:partial one tool-call:t1]", ends[0].StopReason, got)
			}
		})
	}
}
