package subagent_test

// Continuation contract tests for delivery signals, descriptors, resume,
// interrupts and notices (subagent-contract.md §5.7; map in
// CONTRACT_TESTS.md).

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// C50, C87: a pre-aborted caller signal rejects a live delivery and a cold
// one with its reason; the message is never logged and nothing resumes.
func TestPreAbortedFollowupIsRejectedAndNeverLogged(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	sc := newScript().add("live", g.reply("live done")).text("cold", "cold done")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "cold", "cold")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "cold", 1)
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "live", "live")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	reason := errors.New("caller gave up")
	actx, cancel := context.WithCancelCause(ctx)
	cancel(reason)
	for _, id := range []string{"live", "cold"} {
		if _, err := st.Runtime.Followup(actx, parent, id, text("never delivered")); err != reason {
			t.Errorf("%s: err = %v, want the abort reason", id, err)
		}
	}
	if st.Runtime.Resident("cold") {
		t.Error("a pre-aborted follow-up cold-resumed the child")
	}
	g.open()
	lc.waitEnds(t, ctx, "live", 1)
	for _, id := range []string{"live", "cold"} {
		_, evs := persistedEvents(t, ctx, durable{ps}, id)
		if got := userTexts(evs, ""); len(got) != 1 {
			t.Errorf("%s user texts = %q", id, got)
		}
	}
}

// C88, §2.3 "after acceptance": aborting the caller's signal after a
// start or follow-up was accepted does not cancel the child's turns.
func TestAbortAfterAcceptanceDoesNotCancelTheTurn(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	sc := newScript().add("child", g.reply("first")).text("child", "second")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	sctx, scancel := context.WithCancel(ctx)
	if _, _, err := st.Runtime.StartContinuable(sctx, spec(parent, "c88", "child")); err != nil {
		t.Fatal(err)
	}
	scancel()
	g.waitEntered(t, ctx)
	fctx, fcancel := context.WithCancel(ctx)
	if _, err := st.Runtime.Followup(fctx, parent, "c88", text("accepted")); err != nil {
		t.Fatal(err)
	}
	fcancel()
	g.open()
	ends := lc.waitEnds(t, ctx, "c88", 1)
	if ends[0].StopReason != "completed" {
		t.Errorf("end = %+v", ends[0])
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "c88")
	if got := strings.Join(turnEnds(evs), ","); got != "completed,completed" {
		t.Errorf("turn ends = %s", got)
	}
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|accepted" {
		t.Errorf("user texts = %s", got)
	}
}

// C2: a reserved id already live is DUPLICATE_CHILD and the live child is
// untouched.
func TestStartWithALiveReservedIDIsDuplicate(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, _ := durableStack(t, t.TempDir(), newScript().add("child", g.reply("x")).model())
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c2", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	live := st.Live("c2")
	_, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c2", "child"))
	if !subagent.HasCode(err, subagent.CodeDuplicateChild) || err.Error() != `subagent "c2" already exists` {
		t.Errorf("err = %v", err)
	}
	if st.Live("c2") != live || live.Status() != agent.StatusRunning {
		t.Error("the live child was replaced or stopped")
	}
}

// C11, C13: a routeless parent's child records no route in its
// descriptor, and cold resume builds it without one.
func TestRoutelessParentChildHasNoRouteBeforeOrAfterResume(t *testing.T) {
	ctx := testCtx(t)
	resumed := make(chan model.Route, 1)
	var st *subagenttest.Stack
	sc := newScript().text("child task", "one").add("child task", func(context.Context) ([]session.Chunk, error) {
		resumed <- st.Live("c11").CurrentRoute()
		return subagenttest.Text("two"), nil
	})
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	sess, err := st.Sessions.Create(session.Header{ID: "routeless", Cwd: "/workspace"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := agent.New(sess, agent.Options{Model: st.Model, Tools: st.Tools(0, false)})
	if err := st.Agents.Register(parent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c11", "child task")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c11", 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, "c11")
	if got, want := string(evs[indexOf(evs, session.TypeDescriptor)].Data), `{"version":2,"mode":"continuable","provider":"spawn","label":"child task"}`; got != want {
		t.Errorf("descriptor = %s\nwant %s", got, want)
	}
	if _, err := st.Runtime.Followup(ctx, parent, "c11", text("again")); err != nil {
		t.Fatal(err)
	}
	if r := <-resumed; r != (model.Route{}) {
		t.Errorf("resumed route = %+v, want none", r)
	}
	lc.waitEnds(t, ctx, "c11", 2)
}

// C12, C15, C94: tool filter, persona and route override are recorded in
// the descriptor verbatim and a cold resume rebuilds the child from them.
func TestDescriptorCarriesFilterPersonaAndRouteIntoColdResume(t *testing.T) {
	ctx := testCtx(t)
	var specs []subagent.ChildSpec
	st, ps, _, _ := faultStack(t, newScript().text("child", "one", "two").model(), func(c *subagenttest.Config) {
		c.WrapFactory = func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				specs = append(specs, spec)
				return next(s, spec)
			}
		}
	})
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	sp := spec(parent, "c12", "child")
	sp.ToolFilter = &subagent.ToolFilter{Deny: []string{"send_message"}}
	sp.Persona = "reviewer"
	sp.Route = &model.Route{Model: "child-model"}
	if _, _, err := st.Runtime.StartContinuable(ctx, sp); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c12", 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, "c12")
	want := `{"version":2,"mode":"continuable","provider":"spawn","label":"child","agentProvider":"mock","agentModel":"child-model","persona":"reviewer","toolFilter":{"deny":["send_message"]}}`
	if got := string(evs[indexOf(evs, session.TypeDescriptor)].Data); got != want {
		t.Errorf("descriptor = %s\nwant %s", got, want)
	}
	if _, err := st.Runtime.Followup(ctx, parent, "c12", text("resume it")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c12", 2)
	if len(specs) != 2 || specs[1].Fresh || specs[1].Persona != "reviewer" || specs[1].Route != (model.Route{Provider: "mock", Model: "child-model"}) ||
		specs[1].ToolFilter == nil || strings.Join(specs[1].ToolFilter.Deny, ",") != "send_message" {
		t.Errorf("resume spec = %+v", specs)
	}
	_, evs = persistedEvents(t, ctx, durable{ps}, "c12")
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|resume it" {
		t.Errorf("user texts = %s", got)
	}
}

// renamed is an in-process driver registered under another name.
type renamed struct {
	*inprocess.Provider
	name string
}

func (r renamed) Name() string { return r.name }

var _ driver.Continuable = renamed{}

// C18: a child whose provider was unregistered still cold-resumes from
// its descriptor; both epochs report that provider and pair their runs.
func TestFollowupResumesAChildOfAnUnregisteredProvider(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "one", "two").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	unreg, err := st.Runtime.RegisterProvider(renamed{inprocess.Spawn(), "retired"})
	if err != nil {
		t.Fatal(err)
	}
	sp := spec(parent, "c18", "child")
	sp.Provider = "retired"
	if _, _, err := st.Runtime.StartContinuable(ctx, sp); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c18", 1)
	unreg()
	if _, err := st.Runtime.Followup(ctx, parent, "c18", text("again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c18", 2)
	var starts, ends []subagent.LifecycleEvent
	for _, ev := range eventsOf(lc, "c18") {
		switch ev.Type {
		case subagent.EventStart:
			starts = append(starts, ev)
		case subagent.EventEnd:
			ends = append(ends, ev)
		}
	}
	if len(starts) != 2 || starts[0].Provider != "retired" || starts[1].Provider != "retired" ||
		starts[0].RunID != ends[0].RunID || starts[1].RunID != ends[1].RunID || starts[0].RunID == starts[1].RunID {
		t.Errorf("starts %+v ends %+v", starts, ends)
	}
}

// C19: a follow-up to a waiting child (idle, owning a running grandchild)
// wakes the same agent; the grandchild's notice later lands in its log.
func TestFollowupWakesAWaitingChildInPlace(t *testing.T) {
	ctx := testCtx(t)
	gg := newGate()
	sc := newScript().add("grand", gg.reply("grand answer"))
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	sc.add("child", func(context.Context) ([]session.Chunk, error) {
		if _, _, err := st.Runtime.StartContinuable(ctx, spec(st.Live("c19"), "g19", "grand")); err != nil {
			return nil, err
		}
		return subagenttest.Text("waiting"), nil
	}).text("child", "woken", "saw notice")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c19", "child")); err != nil {
		t.Fatal(err)
	}
	gg.waitEntered(t, ctx)
	child := st.Live("c19")
	waitIdle(t, ctx, child)
	if _, err := st.Runtime.Followup(ctx, parent, "c19", text("wake up")); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ctx, child)
	if st.Live("c19") != child {
		t.Error("the follow-up did not reach the same agent")
	}
	gg.open()
	lc.waitEnds(t, ctx, "c19", 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, "c19")
	got := userTexts(evs, "")
	if len(got) != 3 || got[1] != "wake up" || !strings.Contains(got[2], "Background subagent g19 finished and will do no further work") {
		t.Errorf("user texts = %q", got)
	}
}

// C89: an Agent registered under a child's id without an Activation is a
// registry collision: the follow-up is refused and the agent untouched.
func TestFollowupToALiveAgentWithoutActivationIsRefused(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().model())
	parent := st.NewParent(t, "parent")
	seed := []session.Event{{Type: session.TypeDescriptor, Data: []byte(`{"version":2,"mode":"continuable","provider":"spawn","label":"squat"}`)}}
	sess, err := st.Sessions.Create(session.Header{ID: "squatter", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	squatter := st.Register(t, sess)
	before := sess.Len()
	_, err = st.Runtime.Followup(ctx, parent, "squatter", text("hi"))
	var se *subagent.SubagentError
	if !errors.As(err, &se) || se.Code != subagent.CodeDuplicateChild {
		t.Fatalf("err = %v", err)
	}
	if st.Live("squatter") != squatter || squatter.Status() != agent.StatusIdle || sess.Len() != before || st.Runtime.Resident("squatter") {
		t.Error("the squatting agent was touched")
	}
}

// C97: interrupting a child does not signal its resident grandchild.
func TestInterruptingAChildLeavesItsGrandchildRunning(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("grand answer"))
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	if err := st.Runtime.Interrupt(c, subagent.UserAuthority("parent")); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ctx, st.Live(c))
	if a := st.Live(g); a == nil || a.Status() != agent.StatusRunning {
		t.Fatal("the grandchild stopped with its parent's interrupt")
	}
	gg.open()
	ends := lc.waitEnds(t, ctx, g, 1)
	if ends[0].StopReason != "completed" {
		t.Errorf("grandchild end = %+v", ends[0])
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, g)
	if got := strings.Join(turnEnds(evs), ","); got != "completed" {
		t.Errorf("grandchild turn ends = %s", got)
	}
	lc.waitEnds(t, ctx, c, 1)
}

// C101: interrupting an absent id or a one-shot child is an accepted
// no-op under both authorities; the one-shot child keeps running.
func TestInterruptOfAOneShotOrAbsentIDIsANoOp(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, _ := durableStack(t, t.TempDir(), newScript().add("one", g.reply("done")).model())
	parent := st.NewParent(t, "parent")
	run, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Label: "one", Prompt: text("x"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	for _, id := range []string{run.ID, "no-such-child"} {
		for _, auth := range []subagent.Authority{subagent.UserAuthority("parent"), subagent.AncestorAuthority(parent)} {
			if err := st.Runtime.Interrupt(id, auth); err != nil {
				t.Errorf("interrupt %s (%s): %v", id, auth.Kind, err)
			}
		}
	}
	if run.LocalAgent.Status() != agent.StatusRunning {
		t.Error("the one-shot child was cancelled")
	}
	g.open()
	res, err := run.Result(ctx)
	if err != nil || res.StopReason != "completed" {
		t.Errorf("result = %+v, %v", res, err)
	}
	if err := run.Dispose(ctx); err != nil {
		t.Fatal(err)
	}
}

// C33, C79: draining below a continuable root takes down only its
// descendants; the root stays, starts under it are DRAINING, and the
// grandchild's notice is injected into the root without a turn.
func TestDrainBelowAContinuableRootKeepsTheRoot(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	defer gc.open()
	sc := newScript().add("child", gc.reply("child done")).add("grand", gg.reply("never"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	child := st.Live(c)
	if err := st.Runtime.DrainDescendants(ctx, child); err != nil {
		t.Fatal(err)
	}
	if ends := lc.waitEnds(t, ctx, g, 1); ends[0].StopReason != "aborted" {
		t.Errorf("grandchild end = %+v", ends[0])
	}
	if !st.Runtime.Resident(c) || st.Live(c) != child || child.Status() != agent.StatusRunning {
		t.Error("the root was taken down")
	}
	_, _, err := st.Runtime.StartContinuable(ctx, spec(child, "g33", "grand"))
	if !subagent.HasCode(err, subagent.CodeDraining) || err.Error() != `continuable subagents below parent "`+c+`" are draining; the operation was not admitted` {
		t.Errorf("start under the drained root: %v", err)
	}
	var injected int
	for _, ev := range child.Session().MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			for _, m := range d.Inserted {
				if m.Source.Kind == "subagent-settled" {
					injected++
				}
			}
		}
	}
	if injected != 1 {
		t.Errorf("notices injected into the root = %d, want 1", injected)
	}
	if n := count(child.Session().MustEvents(), session.TypeTurnStart); n != 1 {
		t.Errorf("root turns = %d, want 1 (no turn for the notice)", n)
	}
}

// C40: a stale scoped root (not the registry's entry) is ignored.
func TestStaleScopedRootIsIgnored(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	defer g.open()
	st, _ := durableStack(t, t.TempDir(), newScript().add("child", g.reply("never")).text("next", "ok").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c40", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	ghost := agent.New(parent.Session(), agent.Options{})
	if err := st.Runtime.DrainDescendants(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	if !st.Runtime.Resident("c40") {
		t.Error("a stale root drained the live parent's child")
	}
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "n40", "next")); err != nil {
		t.Errorf("the live parent no longer admits: %v", err)
	}
	lc.waitEnds(t, ctx, "n40", 1)
}

// C65: the settlement notice is delivered even when the child already
// reported quietly.
func TestNoticeFollowsAQuietReport(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("main", "seen")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	sc.add("child", func(ctx context.Context) ([]session.Chunk, error) {
		if _, err := st.Runtime.Report(ctx, st.Live("c65"), text("quiet note"), subagent.DeliveryQuiet); err != nil {
			return nil, err
		}
		return subagenttest.Text("the answer"), nil
	})
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c65", "child")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, "c65", 1)
	waitIdle(t, ctx, parent)
	evs := parent.Session().MustEvents()
	if got := userTexts(evs, "subagent-report"); len(got) != 1 || got[0] != "Background subagent c65 reported:\nquiet note" {
		t.Errorf("reports = %q", got)
	}
	if got := userTexts(evs, "subagent-settled"); len(got) != 1 || !strings.HasSuffix(got[0], "Its closing message:\nthe answer") {
		t.Errorf("notices = %q", got)
	}
}

// C70, C71: a child stopped before its first step — by a manager drain or
// by an ancestor's interrupt — "was stopped … no closing message".
func TestChildStoppedBeforeItsFirstStepLeavesNoClosingMessage(t *testing.T) {
	for _, how := range []string{"drain", "interrupt"} {
		t.Run(how, func(t *testing.T) {
			ctx := testCtx(t)
			entered := make(chan struct{}, 1)
			held := func(ctx context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
				if a.Options().ScriptKey == "held" {
					entered <- struct{}{}
					<-ctx.Done()
					return agent.Enter, context.Cause(ctx)
				}
				return agent.Enter, nil
			}
			ps := mustPersistence(t)
			st := subagenttest.New(t, subagenttest.Config{Model: newScript().text("main", "noted").model(), Attach: func(s *session.Store) { ps.Attach(s) },
				Durable: durable{ps}, ChildPreStep: []agent.PreStepHook{held}})
			lc := record(st.Runtime)
			parent := st.NewParent(t, "parent")
			if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c70", "held")); err != nil {
				t.Fatal(err)
			}
			<-entered
			if how == "drain" {
				if err := st.Runtime.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			} else if err := st.Runtime.Interrupt("c70", subagent.AncestorAuthority(parent)); err != nil {
				t.Fatal(err)
			}
			ends := lc.waitEnds(t, ctx, "c70", 1)
			if ends[0].StopReason != "aborted" || ends[0].LastAssistantMessage != nil {
				t.Errorf("end = %+v", ends[0])
			}
			want := "Background subagent c70 was stopped before it finished.\nIt left no closing message."
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
		})
	}
}

// C81: a parent gone before its child settles gets no notice and no
// warning is logged; the end edge is still emitted.
func TestParentGoneBeforeSettlementIsQuiet(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, _, _, logs := faultStack(t, newScript().add("child", g.reply("the answer")).model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c81", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	st.Agents.Unregister(parent)
	if err := parent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g.open()
	if ends := lc.waitEnds(t, ctx, "c81", 1); ends[0].StopReason != "completed" {
		t.Errorf("end = %+v", ends[0])
	}
	if l := logs.String(); l != "" {
		t.Errorf("warnings: %s", l)
	}
	if got := userTexts(parent.Session().MustEvents(), "subagent-settled"); len(got) != 0 {
		t.Errorf("a gone parent got a notice: %q", got)
	}
}

// C82: a parent whose delivery fails (closed but still registered) costs
// a warning; the child still ends "completed".
func TestUndeliverableNoticeIsAWarning(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	st, _, _, logs := faultStack(t, newScript().add("child", g.reply("the answer")).model(), nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c82", "child")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if err := parent.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g.open()
	if ends := lc.waitEnds(t, ctx, "c82", 1); ends[0].StopReason != "completed" {
		t.Errorf("end = %+v", ends[0])
	}
	if l := logs.String(); !strings.Contains(l, `subagent \"c82\" settlement notice was not delivered to its parent`) {
		t.Errorf("log = %s", l)
	}
}
