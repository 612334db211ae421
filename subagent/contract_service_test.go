package subagent_test

// Service contract gaps (subagent-contract.md §5.5, §5.7 C6, C75; map in
// CONTRACT_TESTS.md).

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// #87 (Go difference): a provider-added listener's panic is contained and
// logged; the registration stands and later listeners hear it.
func TestProviderAddedListenerPanicDoesNotFailRegistration(t *testing.T) {
	st, _, _, logs := faultStack(t, nil, nil)
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventProviderAdded {
			panic("added boom")
		}
	})
	lc := record(st.Runtime)
	unreg, err := st.Runtime.RegisterProvider(&stub{name: "alpha"})
	if err != nil {
		t.Fatalf("registration failed: %v", err)
	}
	defer unreg()
	if _, ok := st.Runtime.GetProvider("alpha"); !ok {
		t.Error("the provider is not registered")
	}
	if evs := lc.all(); len(evs) != 1 || evs[0].Type != subagent.EventProviderAdded {
		t.Errorf("later listener heard %+v", evs)
	}
	if !strings.Contains(logs.String(), "subagent/provider-added listener threw: added boom") {
		t.Errorf("log = %s", logs)
	}
}

// #98: no lifecycle event is emitted before the provider's start returns;
// then start, and end once the run settles, with one run id.
func TestOneShotLifecycleWaitsForTheProvidersStart(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{})
	parent := st.NewParent(t, "parent")
	entered, release := make(chan struct{}), make(chan struct{})
	run := driver.NewRun("deferred-child", nil, 1, nil)
	p := &stub{name: "deferred", startFn: func() (*driver.Run, error) {
		close(entered)
		<-release
		return run, nil
	}}
	unreg, _ := st.Runtime.RegisterProvider(p)
	defer unreg()
	lc := record(st.Runtime)
	done := make(chan error, 1)
	go func() {
		_, err := st.Runtime.Start(ctx, "deferred", subagent.OneShotRequest{Parent: parent})
		done <- err
	}()
	<-entered
	if evs := lc.all(); len(evs) != 0 {
		t.Errorf("events before the provider returned: %+v", evs)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if evs := lc.all(); len(evs) != 1 || evs[0].Type != subagent.EventStart || evs[0].ParentID != "parent" {
		t.Fatalf("events after start = %+v", evs)
	}
	run.Settle(driver.Result{StopReason: "completed"}, nil)
	evs := lc.all()
	if len(evs) != 2 || evs[1].Type != subagent.EventEnd || evs[0].RunID != evs[1].RunID {
		t.Errorf("events after settlement = %+v", evs)
	}
}

// #103: SubagentError is the module's typed error: class name, stable
// code, matched by code through wrapping.
func TestSubagentErrorShape(t *testing.T) {
	err := subagent.NewError(subagent.CodeNoProvider, "boom")
	wrapped := errors.Join(errors.New("context"), err)
	var se *subagent.SubagentError
	if !errors.As(wrapped, &se) || se.Name() != "SubagentError" || se.Code != subagent.CodeNoProvider || se.ErrorCode() != "NO_PROVIDER" || se.Error() != "boom" {
		t.Errorf("error = %#v", se)
	}
	if !subagent.HasCode(wrapped, subagent.CodeNoProvider) || subagent.HasCode(wrapped, subagent.CodeDraining) {
		t.Error("HasCode does not match by code")
	}
	if !errors.Is(wrapped, subagent.NewError(subagent.CodeNoProvider, "")) {
		t.Error("errors.Is does not match by code alone")
	}
}

// C6: an abort inside the creation window (the child's session exists, its
// activation does not) rejects with the abort's reason and leaves only the
// parent.
func TestAbortInTheCreationWindowRollsBack(t *testing.T) {
	base := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "never").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	reason := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	unobserve := st.Sessions.Observe(&session.Observer{Created: func(s *session.Session, _ bool) {
		if s.ID() == "c6" {
			cancel(reason)
		}
	}})
	defer unobserve()
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c6", "child")); err != reason {
		t.Fatalf("err = %v, want the abort reason", err)
	}
	gone(t, st, "c6")
	if n := len(st.Agents.List()); n != 1 {
		t.Errorf("agents = %d, want only the parent", n)
	}
	if evs := eventsOf(lc, "c6"); len(evs) != 0 {
		t.Errorf("lifecycle of an unpublished child: %+v", evs)
	}
}

// C75: two notices reaching a busy parent both wait in its next-step
// queue; no new turn starts for them.
func TestTwoNoticesToABusyParentRideTheOpenTurn(t *testing.T) {
	ctx := testCtx(t)
	gp, ga, gb := newGate(), newGate(), newGate()
	sc := newScript().add("main", gp.reply("parent done")).add("a", ga.reply("A")).add("b", gb.reply("B"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, err := parent.Followup(session.Message{Content: text("work")}); err != nil {
		t.Fatal(err)
	}
	gp.waitEntered(t, ctx)
	a, _ := startChild(t, ctx, st.Runtime, parent, "a")
	b, _ := startChild(t, ctx, st.Runtime, parent, "b")
	ga.waitEntered(t, ctx)
	gb.waitEntered(t, ctx)
	ga.open()
	gb.open()
	lc.waitEnds(t, ctx, a, 1)
	lc.waitEnds(t, ctx, b, 1)
	var targets []string
	for _, ev := range parent.Session().MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			if len(d.Inserted) == 1 && d.Inserted[0].Source.Kind == "subagent-settled" {
				targets = append(targets, d.Target)
			}
		}
	}
	if len(targets) != 2 || targets[0] != session.InboxNextStep || targets[1] != session.InboxNextStep {
		t.Errorf("notice targets = %v, want two next-step inserts", targets)
	}
	gp.open()
	waitIdle(t, ctx, parent)
	evs := parent.Session().MustEvents()
	if n := count(evs, session.TypeTurnStart); n != 1 {
		t.Errorf("parent turns = %d, want 1", n)
	}
	if got := userTexts(evs, "subagent-settled"); len(got) != 2 {
		t.Errorf("notices delivered = %d", len(got))
	}
}

// turnHook returns a pre-step hook that answers decide for children
// labelled key on the given turn and enters every other step.
func turnHook(key string, turn int, decide func() (agent.Decision, error)) agent.PreStepHook {
	return func(_ context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
		if a.Options().ScriptKey == key && s.Turn == turn {
			return decide()
		}
		return agent.Enter, nil
	}
}

// C53: a resumed epoch whose prompt is refused at pre-step ends "refusal"
// without output: the first epoch's answer is not the second's.
func TestResumedEpochRefusedAtPreStepHasNoOutput(t *testing.T) {
	ctx := testCtx(t)
	refuse := turnHook("c53", 2, func() (agent.Decision, error) { return agent.Reject, nil })
	st, _, _, _ := faultStack(t, newScript().text("c53", "first answer").model(), func(c *subagenttest.Config) {
		c.ChildPreStep = []agent.PreStepHook{refuse}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c53", "c53")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c53", 1)
	if _, err := st.Runtime.Followup(ctx, parent, "c53", text("again")); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, "c53", 2)
	if ends[1].StopReason != "refusal" || ends[1].LastAssistantMessage != nil {
		t.Errorf("second epoch end = %+v", ends[1])
	}
}

// C68: a second turn failing at pre-step after the first answered ends
// the epoch "error"; the notice says so and quotes the first answer. The
// second task never reaches the model. Go difference: the turn's claimed
// message is logged as the step's first act, before the pre-step chain
// runs (agent.deliver precedes the hooks), so "second task" is in the log
// once; the reference leaves it unlogged.
func TestSecondTurnFailingAtPreStepIsNoticedWithTheEarlierAnswer(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	fail := turnHook("c68", 2, func() (agent.Decision, error) { return agent.Enter, errors.New("ENOSPC: no space left on device") })
	m := newScript().add("c68", g.reply("the answer")).text("main", "noted").model()
	st, ps, _, _ := faultStack(t, m, func(c *subagenttest.Config) {
		c.ChildPreStep = []agent.PreStepHook{fail}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c68", "c68")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if _, err := st.Runtime.Followup(ctx, parent, "c68", text("second task")); err != nil {
		t.Fatal(err)
	}
	g.open()
	ends := lc.waitEnds(t, ctx, "c68", 1)
	if ends[0].StopReason != "error" {
		t.Errorf("end = %+v", ends[0])
	}
	waitIdle(t, ctx, parent)
	want := "Background subagent c68 failed before it finished.\nIts closing message:\nthe answer"
	if got := userTexts(parent.Session().MustEvents(), "subagent-settled"); len(got) != 1 || got[0] != want {
		t.Errorf("notices = %q, want %q", got, want)
	}
	if n := len(m.Requests("c68")); n != 1 {
		t.Errorf("child model requests = %d, want 1: the second task reached the model", n)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "c68")
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: c68|second task" {
		t.Errorf("user texts = %s", got)
	}
	if got := strings.Join(turnEnds(evs), ","); got != "completed,error" {
		t.Errorf("turn ends = %s", got)
	}
}
