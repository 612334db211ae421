package subagent_test

// Continuation contract tests that hold an entry every run (issue 35):
// each waits on a gate, a hook or a lifecycle event placed so that the
// broken behaviour and the right one cannot look the same
// (subagent-contract.md §5.7; map and mutations in CONTRACT_TESTS.md).

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

// signal is a channel closed once, by the first fire.
type signal struct {
	ch   chan struct{}
	once sync.Once
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (s *signal) fire() { s.once.Do(func() { close(s.ch) }) }

func (s *signal) wait(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-s.ch:
	case <-ctx.Done():
		t.Fatalf("never happened: %s", what)
	}
}

// inserted returns the messages inserted into events' inbox splices.
func inserted(events []session.Event) []session.Message {
	var out []session.Message
	for _, ev := range events {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			out = append(out, d.Inserted...)
		}
	}
	return out
}

// C20: a follow-up from a stranger — a live agent that is not the child's
// durable parent — to a RESIDENT child is refused at the final admission
// span; the message never reaches the child's inbox.
func TestStrangerFollowupToAResidentChildIsRefused(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, ps := durableStack(t, t.TempDir(), newScript().add("child", g.reply("done")).model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	stranger := st.NewParent(t, "stranger")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c20", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if !st.Runtime.Resident("c20") {
		t.Fatal("the child is not resident inside its model call")
	}
	_, err := st.Runtime.Followup(ctx, stranger, "c20", text("from a stranger"))
	if want := `subagent "c20" belongs to another parent session`; !subagent.HasCode(err, subagent.CodeUnauthorized) || err == nil || err.Error() != want {
		t.Errorf("err = %v, want UNAUTHORIZED %q", err, want)
	}
	g.open()
	lc.waitEnds(t, ctx, "c20", 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, "c20")
	var texts []string
	for _, m := range inserted(evs) {
		texts = append(texts, session.JoinText(m.Content, ""))
	}
	if len(texts) != 1 || texts[0] != "task: child" {
		t.Errorf("child inbox inserts = %q, want only the prompt", texts)
	}
}

// C91: admission walks the lineage: a one-shot child of a draining root
// is itself below that root, so a continuable start under it is DRAINING
// (the message names the root) and leaves nothing behind.
func TestStartUnderAOneShotChildOfADrainingRootIsDraining(t *testing.T) {
	ctx := testCtx(t)
	gm := newGate()
	defer gm.open()
	st, _ := durableStack(t, t.TempDir(), newScript().add("mid", gm.reply("mid done")).model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	run, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Label: "mid", Prompt: text("delegate"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	gm.waitEntered(t, ctx)
	mid := run.LocalAgent
	if err := st.Runtime.DrainDescendants(ctx, parent); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Runtime.StartContinuable(ctx, spec(mid, "c91", "leaf"))
	want := `continuable subagents below parent "parent" are draining; the operation was not admitted`
	if !subagent.HasCode(err, subagent.CodeDraining) || err == nil || err.Error() != want {
		t.Errorf("start under the one-shot child: %v, want DRAINING %q", err, want)
	}
	gone(t, st, "c91")
	if evs := eventsOf(lc, "c91"); len(evs) != 0 {
		t.Errorf("lifecycle of the refused child: %+v", evs)
	}
	gm.open()
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
}

// C79: a scoped drain's settlement notice to an IDLE root is injected:
// it is in the root's inbox, no turn starts and the root stays idle (to a
// running root, an injection and a steer would look the same).
func TestScopedDrainNoticeToAnIdleRootStartsNoTurn(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, _ := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).text("main", "woken").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c79", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if err := st.Runtime.DrainDescendants(ctx, parent); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c79", 1)
	if parent.Status() != agent.StatusIdle {
		t.Error("the idle root woke on the drain's notice")
	}
	waitIdle(t, ctx, parent)
	pevs := parent.Session().MustEvents()
	want := "Background subagent c79 was stopped before it finished.\nIt left no closing message."
	if got := inserted(pevs); len(got) != 1 || session.JoinText(got[0].Content, "\n") != want || got[0].Source.Kind != "subagent-settled" {
		t.Errorf("root inbox inserts = %+v, want the notice", got)
	}
	if n := count(pevs, session.TypeTurnStart); n != 0 {
		t.Errorf("root turns = %d, want 0", n)
	}
}

// C32: a scoped drain cancels the root's forest synchronously top-down —
// the child before the grandchild, both with cause parent and the inbox
// dropped — and leaves another root's child running and admitting.
func TestDrainDescendantsCancelsTheForestTopDown(t *testing.T) {
	ctx := testCtx(t)
	gc, gg, gb := newGate(), newGate(), newGate()
	defer gc.open()
	defer gg.open()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never")).add("b", gb.reply("B done")).text("b", "B again")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	var (
		mu      sync.Mutex
		cancels []string
	)
	subagent.SetCancelHook(st.Runtime, func(id string, cause session.AbortReason, keepInbox bool) {
		mu.Lock()
		defer mu.Unlock()
		if cause.Kind != "parent" || keepInbox {
			cancels = append(cancels, id+": wrong cause "+cause.Kind)
			return
		}
		cancels = append(cancels, id)
	})
	lc := record(st.Runtime)
	pa := st.NewParent(t, "parent-a")
	pb := st.NewParent(t, "parent-b")
	c, g := startHeldChildAndGrandchild(t, ctx, st, pa, gc, gg)
	b, _ := startChild(t, ctx, st.Runtime, pb, "b")
	gb.waitEntered(t, ctx)

	if err := st.Runtime.DrainDescendants(ctx, pa); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]string(nil), cancels...)
	mu.Unlock()
	if len(got) < 2 || got[0] != c || got[1] != g {
		t.Errorf("cancels = %v, want the child %s, then the grandchild %s first", got, c, g)
	}
	for _, id := range got {
		if id != c && id != g {
			t.Errorf("cancel outside the drained forest: %s", id)
		}
	}
	for _, id := range []string{c, g} {
		if ends := lc.waitEnds(t, ctx, id, 1); ends[0].StopReason != "aborted" {
			t.Errorf("%s end = %+v", id, ends[0])
		}
	}
	if !st.Runtime.Resident(b) {
		t.Error("the other root's child was taken down")
	}
	if _, err := st.Runtime.Followup(ctx, pb, b, text("more")); err != nil {
		t.Errorf("follow-up to the other forest: %v", err)
	}
	for _, try := range []func() error{
		func() error { _, _, err := st.Runtime.StartContinuable(ctx, spec(pa, "late", "x")); return err },
		func() error { _, err := st.Runtime.Followup(ctx, pa, c, text("x")); return err },
	} {
		if err := try(); !subagent.HasCode(err, subagent.CodeDraining) {
			t.Errorf("work under the drained root after the drain: %v", err)
		}
	}
	gb.open()
	lc.waitEnds(t, ctx, b, 1)
}

// Untested behaviour 2 (§2.3 "ownership rolled back", §2.7 residency): a
// nested start rolled back after its owner went idle releases the owner:
// a waiting owner with no other resident child settles.
func TestRolledBackNestedStartLetsItsIdleOwnerSettle(t *testing.T) {
	ctx := testCtx(t)
	gc := newGate()
	defer gc.open()
	st, _ := durableStack(t, t.TempDir(), newScript().add("child", gc.reply("child done")).model())
	tried := make(chan string, 16)
	subagent.SetSettleTried(st.Runtime, func(id string) { tried <- id })
	lc := record(st.Runtime)
	held, release := newSignal(), make(chan struct{})
	st.Runtime.OnPublish(func(ev subagent.LifecycleEvent) error {
		if ev.ID != "g-rolled" {
			return nil
		}
		held.fire()
		<-release
		return errors.New("not recorded")
	})
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c-owner", "child")); err != nil {
		t.Fatal(err)
	}
	gc.waitEntered(t, ctx)
	child := st.Live("c-owner")
	started := make(chan error, 1)
	go func() {
		_, _, err := st.Runtime.StartContinuable(ctx, spec(child, "g-rolled", "grand"))
		started <- err
	}()
	held.wait(t, ctx, "the nested start's publication")
	// The owner's turn ends while it owns the nested start: its settlement
	// attempt finds a resident child and keeps it.
	gc.open()
	waitIdle(t, ctx, child)
	for id := ""; id != "c-owner"; {
		select {
		case id = <-tried:
		case <-ctx.Done():
			t.Fatal("the owner's settlement attempt never ran")
		}
	}
	if !st.Runtime.Resident("c-owner") {
		t.Fatal("the owner settled while it owned a starting child")
	}
	close(release)
	if err := <-started; !subagent.HasCode(err, subagent.CodeStartPublicationFailed) {
		t.Fatalf("nested start: %v", err)
	}
	subagent.WaitSettled(st.Runtime)
	if st.Runtime.Resident("c-owner") {
		t.Fatal("the owner stayed resident after its only nested start was rolled back")
	}
	if ends := lc.waitEnds(t, ctx, "c-owner", 1); ends[0].StopReason != "completed" {
		t.Errorf("owner end = %+v", ends[0])
	}
	gone(t, st, "g-rolled")
}

// Untested behaviour 1 (§2.3 "any failure before acceptance … Activation
// removed", §2.4 cold resume): a cold resume whose install fails — here
// its start publication — is rolled back: nothing resident, registered or
// live, no lifecycle edge for it, and the next follow-up resumes the child.
func TestColdResumeFailingAtInstallIsRolledBack(t *testing.T) {
	ctx := testCtx(t)
	st, ps := durableStack(t, t.TempDir(), newScript().text("child", "first", "second").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "cold", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "cold", 1)
	unpublish := st.Runtime.OnPublish(func(ev subagent.LifecycleEvent) error {
		return errors.New("not recorded")
	})
	_, err := st.Runtime.Followup(ctx, parent, "cold", text("refused"))
	if !subagent.HasCode(err, subagent.CodeStartPublicationFailed) {
		t.Fatalf("err = %v", err)
	}
	gone(t, st, "cold")
	if n := len(eventsOf(lc, "cold")); n != 2 {
		t.Errorf("lifecycle events of cold = %d, want the first epoch's 2 only", n)
	}
	unpublish()
	if _, err := st.Runtime.Followup(ctx, parent, "cold", text("accepted")); err != nil {
		t.Fatalf("follow-up after the failed resume: %v", err)
	}
	ends := lc.waitEnds(t, ctx, "cold", 2)
	if got := session.JoinText(ends[1].LastAssistantMessage, ""); got != "second" {
		t.Errorf("second epoch output = %q", got)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "cold")
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|accepted" {
		t.Errorf("user texts = %s", got)
	}
}

// Untested behaviour 3 (§2.6): a quiet report is injected: it wakes no
// idle parent. The parent's one turn is the settlement notice's, which
// delivers the report first.
func TestQuietReportDoesNotWakeAnIdleParent(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("main", "seen both")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	var (
		statusAfter agent.Status
		turnsAfter  int
	)
	sc.add("child", func(ctx context.Context) ([]session.Chunk, error) {
		if _, err := st.Runtime.Report(ctx, st.Live("quiet"), text("quiet note"), subagent.DeliveryQuiet); err != nil {
			return nil, err
		}
		statusAfter = parent.Status()
		turnsAfter = count(parent.Session().MustEvents(), session.TypeTurnStart)
		return subagenttest.Text("the answer"), nil
	})
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "quiet", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "quiet", 1)
	if statusAfter != agent.StatusIdle || turnsAfter != 0 {
		t.Errorf("after the quiet report the parent was %s with %d turns, want idle with none", statusAfter, turnsAfter)
	}
	waitIdle(t, ctx, parent)
	evs := parent.Session().MustEvents()
	if n := count(evs, session.TypeTurnStart); n != 1 {
		t.Errorf("parent turns = %d, want 1 (the notice's)", n)
	}
	got := userTexts(evs, "")
	if len(got) != 2 || got[0] != "Background subagent quiet reported:\nquiet note" || !strings.HasPrefix(got[1], "Background subagent quiet finished") {
		t.Errorf("parent user texts = %q, want the report then the notice", got)
	}
}

// Untested behaviour 4 (§2.1 fork seed = the completed-turn prefix): a
// fork started from inside the parent's open turn is seeded with the
// parent's completed turns only — the seed ends at turn 1's turn/end and
// holds none of the open turn — and continues the numbering at turn 2.
func TestForkStartedDuringTheParentsOpenTurnCopiesOnlyCompletedTurns(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("main", "parent answer").text("forked", "fork answer")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, err := parent.Prompt(ctx, session.Message{Content: text("hello")}); err != nil {
		t.Fatal(err)
	}
	completed := len(parent.Session().MustEvents())
	forked := make(chan error, 1)
	sc.add("main", func(ctx context.Context) ([]session.Chunk, error) {
		_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
			Provider: "fork", Label: "forked", ChildID: "forked", Prompt: text("go on"), Parent: parent,
		})
		forked <- err
		return subagenttest.Text("parent again"), nil
	})
	if _, err := parent.Prompt(ctx, session.Message{Content: text("fork now")}); err != nil {
		t.Fatal(err)
	}
	if err := <-forked; err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "forked", 1)
	h, evs := persistedEvents(t, ctx, durable{ps}, "forked")
	if h.SeedLength != completed {
		t.Errorf("seedLength = %d, want %d (the parent's log at its first turn/end)", h.SeedLength, completed)
	}
	seed := evs[:min(h.SeedLength, len(evs))]
	if n := count(seed, session.TypeTurnStart); n != 1 || seed[len(seed)-1].Type != session.TypeTurnEnd {
		t.Errorf("seed has %d turn starts and ends with %s, want 1 and turn/end", n, seed[len(seed)-1].Type)
	}
	if got := userTexts(seed, ""); len(got) != 1 || got[0] != "hello" {
		t.Errorf("seed user texts = %q, want only the completed turn's", got)
	}
	first := evs[indexOf(evs[h.SeedLength:], session.TypeTurnStart)+h.SeedLength]
	if d, _ := session.DecodeData[session.TurnData](first); d.Turn != 2 {
		t.Errorf("first child turn = %d, want 2", d.Turn)
	}
}
