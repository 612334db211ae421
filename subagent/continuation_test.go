package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// startHeldChildAndGrandchild starts continuable child "child" under
// parent and, once the child is inside its first model call (gate gc),
// continuable grandchild "grand" under it, and waits until the grandchild
// is inside its model call too (gate gg).
func startHeldChildAndGrandchild(t *testing.T, ctx context.Context, st *subagenttest.Stack, parent *agent.Agent, gc, gg *gate) (child, grand string) {
	t.Helper()
	child, _ = startChild(t, ctx, st.Runtime, parent, "child")
	gc.waitEntered(t, ctx)
	grand, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "grand", Prompt: text("deep"), Parent: st.Live(child)})
	if err != nil {
		t.Fatal(err)
	}
	gg.waitEntered(t, ctx)
	return child, grand
}

// startChild starts a continuable spawn child of parent labelled label
// with prompt "task: <label>".
func startChild(t *testing.T, ctx context.Context, rt *subagent.Runtime, parent *agent.Agent, label string) (string, string) {
	t.Helper()
	id, msg, err := rt.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: "spawn", Label: label, Prompt: text("task: " + label), Parent: parent,
	})
	if err != nil {
		t.Fatalf("StartContinuable(%q): %v", label, err)
	}
	return id, msg
}

// persistedEvents reads a child's log from disk.
func persistedEvents(t *testing.T, ctx context.Context, d durable, id string) (session.Header, []session.Event) {
	t.Helper()
	h, evs, err := d.Inspect(ctx, id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return h, evs
}

// C1: the start resolves at inbox acceptance with the inserted message's
// id: at that moment the prompt is not logged as a user message and no
// model request was made (the child's loop is held at its first
// turn/start until the start has returned); later the persisted log holds
// the prompt under that id.
func TestStartContinuableResolvesWithTheAcceptedInboxMessageID(t *testing.T) {
	ctx := testCtx(t)
	m := newScript().text("child", "the answer").model()
	st, ps := durableStack(t, t.TempDir(), m)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	var (
		mu     sync.Mutex
		logged []string
		once   sync.Once
	)
	resolved := make(chan struct{})
	unobserve := st.Sessions.Observe(&session.Observer{Appended: func(s *session.Session, ev session.Event) {
		if s.ID() == "parent" {
			return
		}
		mu.Lock()
		logged = append(logged, ev.Type)
		mu.Unlock()
		if ev.Type == session.TypeTurnStart {
			once.Do(func() {
				select {
				case <-resolved:
				case <-ctx.Done():
				}
			})
		}
	}})
	defer unobserve()

	id, msgID := startChild(t, ctx, st.Runtime, parent, "child")
	mu.Lock()
	atResolve := slices.Clone(logged)
	mu.Unlock()
	requests := len(m.Requests("child"))
	close(resolved)
	if ctx.Err() != nil {
		t.Fatal("StartContinuable resolved only when the test's bound let the held turn go: it waits for its child's turn instead of resolving at inbox acceptance")
	}
	if slices.Contains(atResolve, session.TypeUserMessage) || requests != 0 {
		t.Errorf("at resolution the child had logged %v and made %d model requests; want no user message and none", atResolve, requests)
	}
	if len(id) != 36 {
		t.Errorf("child id %q is not UUID-shaped", id)
	}
	lc.waitEnds(t, ctx, id, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	msgs := userMessages(evs)
	if len(msgs) != 1 || msgs[0].ID != msgID || session.JoinText(msgs[0].Content, "") != "task: child" {
		t.Fatalf("persisted prompt = %+v, want one message with id %s", msgs, msgID)
	}
	i := indexOf(evs, session.TypeInboxSpliced)
	d, _ := session.DecodeData[session.InboxSplicedData](evs[i])
	if len(d.Inserted) != 1 || d.Inserted[0].ID != msgID {
		t.Errorf("first inbox splice %+v does not insert message %s", d, msgID)
	}
}

func TestContinuableDescriptorIsInTheCreationSeedBeforeTheFirstTurnStart(t *testing.T) {
	ctx := testCtx(t)
	st, ps := durableStack(t, t.TempDir(), newScript().text("child task", "ok").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child task")
	lc.waitEnds(t, ctx, id, 1)

	h, evs := persistedEvents(t, ctx, durable{ps}, id)
	if h.ParentSession != "parent" || h.Origin != "subagent" || h.DelegationDepth != 1 || h.Cwd != "/workspace" || h.SeedLength != 0 {
		t.Errorf("header = %+v", h)
	}
	var types []string
	for _, ev := range evs[:3] {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, ","); got != "subagent/descriptor,session/end-seed,agent/inbox/spliced" {
		t.Errorf("log starts %s", got)
	}
	if di, ti := indexOf(evs, session.TypeDescriptor), indexOf(evs, session.TypeTurnStart); di < 0 || di > ti {
		t.Errorf("descriptor at %d, first turn/start at %d", di, ti)
	}
	want := `{"version":2,"mode":"continuable","provider":"spawn","label":"child task","agentProvider":"mock","agentModel":"mock"}`
	if got := string(evs[0].Data); got != want {
		t.Errorf("descriptor = %s\nwant %s", got, want)
	}
	raw, _ := json.Marshal(evs[0])
	if strings.Contains(string(raw), "surfaceOp") || evs[0].Ignorable {
		t.Errorf("descriptor event carries surfaceOp or ignorable: %s", raw)
	}
}

func TestContinuableForkChildContinuesTheParentsTurnNumbering(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("main", "parent answer").text("forked", "fork answer")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, err := parent.Prompt(ctx, session.Message{Content: text("hello")}); err != nil {
		t.Fatal(err)
	}
	id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "fork", Label: "forked", Prompt: text("go on"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, id, 1)
	h, evs := persistedEvents(t, ctx, durable{ps}, id)
	L := h.SeedLength
	if L == 0 {
		t.Fatal("fork child has no seedLength")
	}
	if evs[L-1].Type != session.TypeTurnEnd || evs[L].Type != session.TypeEndSeed || evs[L+1].Type != session.TypeDescriptor || evs[L+2].Type != session.TypeEndSeed {
		t.Fatalf("seed boundary: %s %s %s %s", evs[L-1].Type, evs[L].Type, evs[L+1].Type, evs[L+2].Type)
	}
	first := evs[indexOf(evs[L:], session.TypeTurnStart)+L]
	if d, _ := session.DecodeData[session.TurnData](first); d.Turn != 2 {
		t.Errorf("first child turn = %d, want 2", d.Turn)
	}
	if got := userTexts(evs[L:], ""); len(got) != 1 || got[0] != "go on" {
		t.Errorf("own user texts = %q", got)
	}
}

func TestSettledContinuableChildHoldsNoAgentSessionOrActivation(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "done").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	if st.Runtime.Resident(id) || st.Live(id) != nil {
		t.Error("settled child is still resident or registered")
	}
	if _, ok := st.Sessions.Get(id); ok {
		t.Error("settled child's session is still live")
	}
}

func TestSettlementNoticeToAnIdleParentStartsExactlyOneTurn(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("child", "the answer").text("main", "NOTED")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	waitIdle(t, ctx, parent)

	evs := parent.Session().MustEvents()
	msgs := userMessages(evs)
	if len(msgs) != 1 {
		t.Fatalf("parent user messages = %d", len(msgs))
	}
	wantSummary := "Background subagent " + id + " finished and will do no further work unless you send it more."
	if got := session.JoinText(msgs[0].Content, "\n"); got != wantSummary+"\nIts closing message:\nthe answer" {
		t.Errorf("notice = %q", got)
	}
	if len(msgs[0].Content) != 3 {
		t.Errorf("notice has %d blocks, want 3", len(msgs[0].Content))
	}
	src := msgs[0].Source
	if src.Kind != "subagent-settled" || src.Form != "notice" || src.Summary != wantSummary || src.SenderSessionID != id {
		t.Errorf("notice source = %+v", src)
	}
	if n := count(evs, session.TypeTurnStart); n != 1 {
		t.Errorf("parent turns = %d, want 1", n)
	}
}

func TestSettlementNoticeTextsFollowTheStopReason(t *testing.T) {
	reject := func(ctx context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
		if a.Options().ScriptKey == "refuse" {
			return agent.Reject, nil
		}
		return agent.Enter, nil
	}
	tests := []struct {
		label string
		reply func(context.Context) ([]session.Chunk, error)
		want  string
		stop  string
	}{
		{"ok", func(context.Context) ([]session.Chunk, error) { return subagenttest.Text("the answer"), nil },
			"finished and will do no further work unless you send it more.\nIts closing message:\nthe answer", "completed"},
		{"long", func(context.Context) ([]session.Chunk, error) { return subagenttest.Truncated("half an ans"), nil },
			"ran out of room before it finished.\nIts closing message:\nhalf an ans", "max-tokens"},
		{"refuse", nil, "declined the task.\nIt left no closing message.", "refusal"},
		{"broken", func(context.Context) ([]session.Chunk, error) { return nil, errors.New("model down") },
			"failed before it finished.\nIt left no closing message.", "error"},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			ctx := testCtx(t)
			sc := newScript()
			if tt.reply != nil {
				sc.add(tt.label, tt.reply)
			}
			ps := mustPersistence(t)
			st := subagenttest.New(t, subagenttest.Config{Model: sc.model(), Attach: func(s *session.Store) { ps.Attach(s) },
				Durable: durable{ps}, ChildPreStep: []agent.PreStepHook{reject}})
			lc := record(st.Runtime)
			parent := st.NewParent(t, "parent")
			id, _ := startChild(t, ctx, st.Runtime, parent, tt.label)
			ends := lc.waitEnds(t, ctx, id, 1)
			if ends[0].StopReason != tt.stop {
				t.Errorf("stop = %s, want %s", ends[0].StopReason, tt.stop)
			}
			waitIdle(t, ctx, parent)
			msgs := userMessages(parent.Session().MustEvents())
			want := "Background subagent " + id + " " + tt.want
			if len(msgs) == 0 || session.JoinText(msgs[0].Content, "\n") != want {
				t.Errorf("notice = %+v\nwant %q", msgs, want)
			}
		})
	}
}

func TestSettlementNoticeSteersABusyParentInsteadOfStartingATurn(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	sc := newScript().text("child", "the answer").add("main", g.reply("parent done"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, err := parent.Followup(session.Message{Content: text("work")}); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	// The notice waits in the parent's next-step queue of the open turn.
	var steered bool
	for _, ev := range parent.Session().MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			if d.Target == session.InboxNextStep && len(d.Inserted) == 1 && d.Inserted[0].Source.Kind == "subagent-settled" {
				steered = true
			}
		}
	}
	if !steered {
		t.Error("notice was not inserted into the next-step queue")
	}
	g.open()
	waitIdle(t, ctx, parent)
	evs := parent.Session().MustEvents()
	if n := count(evs, session.TypeTurnStart); n != 1 {
		t.Errorf("parent turns = %d, want 1 (the notice rides in the open turn)", n)
	}
	if got := userTexts(evs, "subagent-settled"); len(got) != 1 {
		t.Errorf("notices delivered = %d", len(got))
	}
}

// C16, C62: follow-ups accepted while the child runs get distinct ids,
// reach the same agent and become one later turn each; while they wait in
// the inbox the child stays registered and resident, and every turn makes
// exactly one model request.
func TestFollowupWhileRunningBecomesSeparateLaterTurns(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	m := newScript().add("child", g.reply("first")).text("child", "second", "third").model()
	st, ps := durableStack(t, t.TempDir(), m)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	g.waitEntered(t, ctx)
	child := st.Live(id)
	m1, err := st.Runtime.Followup(ctx, parent, id, text("first follow-up"))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := st.Runtime.Followup(ctx, parent, id, text("second follow-up"))
	if err != nil {
		t.Fatal(err)
	}
	if m1 == m2 || st.Live(id) != child {
		t.Error("follow-ups must get distinct ids and reach the same agent")
	}
	if !st.Runtime.Resident(id) || len(m.Requests("child")) != 1 {
		t.Errorf("while the follow-ups wait: resident %v, model requests %d; want resident and 1", st.Runtime.Resident(id), len(m.Requests("child")))
	}
	g.open()
	lc.waitEnds(t, ctx, id, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|first follow-up|second follow-up" {
		t.Errorf("user texts = %s", got)
	}
	if n := count(evs, session.TypeTurnStart); n != 3 {
		t.Errorf("turns = %d, want 3", n)
	}
	if n := len(m.Requests("child")); n != 3 {
		t.Errorf("model requests = %d, want 3 (one per turn)", n)
	}
}

func TestFollowupColdResumesASettledChildWithoutASecondDescriptor(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("child", "first answer", "second answer")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)

	if _, err := st.Runtime.Followup(ctx, parent, id, text("continue please")); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, id, 2)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|continue please" {
		t.Errorf("user texts = %s", got)
	}
	if n := count(evs, session.TypeDescriptor); n != 1 {
		t.Errorf("descriptors = %d, want 1", n)
	}
	var starts []subagent.LifecycleEvent
	for _, ev := range lc.all() {
		if ev.Type == subagent.EventStart {
			starts = append(starts, ev)
		}
	}
	if len(starts) != 2 || starts[0].RunID == starts[1].RunID || starts[0].RunID != ends[0].RunID || starts[1].RunID != ends[1].RunID {
		t.Errorf("start/end pairs do not match: %+v / %+v", starts, ends)
	}
	for i, e := range ends {
		if e.Provider != "spawn" || !e.Local || e.StopReason != "completed" {
			t.Errorf("end %d = %+v", i, e)
		}
	}
	if got := session.JoinText(ends[0].LastAssistantMessage, ""); got != "first answer" {
		t.Errorf("epoch 1 output = %q", got)
	}
	if got := session.JoinText(ends[1].LastAssistantMessage, ""); got != "second answer" {
		t.Errorf("epoch 2 output = %q", got)
	}
}

func TestFollowupAuthorityAndResumabilityErrors(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("child", "ok").text("one", "once")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	stranger := st.NewParent(t, "stranger")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)

	run, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Label: "one", Prompt: text("x"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run.Dispose(ctx); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		caller *agent.Agent
		id     string
		code   subagent.Code
		msg    string
	}{
		{"stranger", stranger, id, subagent.CodeUnauthorized, `subagent "` + id + `" belongs to another parent session`},
		{"unknown", parent, "no-such-child", subagent.CodeNotResumable, `subagent "no-such-child" is unavailable`},
		{"one-shot", parent, run.ID, subagent.CodeNotResumable, `subagent "` + run.ID + `" has no supported continuation state and cannot be resumed; do not retry send_message with this id`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := st.Runtime.Followup(ctx, tt.caller, tt.id, text("hi"))
			if !subagent.HasCode(err, tt.code) || err.Error() != tt.msg {
				t.Errorf("err = %v, want %s %q", err, tt.code, tt.msg)
			}
		})
	}
	t.Run("stale parent", func(t *testing.T) {
		st.Agents.Unregister(parent)
		successor := st.Register(t, parent.Session())
		defer func() { st.Agents.Unregister(successor); _ = st.Agents.Register(parent) }()
		_, err := st.Runtime.Followup(ctx, parent, id, text("hi"))
		want := `subagent "` + id + `" delivery requires the exact live parent agent`
		if !subagent.HasCode(err, subagent.CodeUnauthorized) || err.Error() != want {
			t.Errorf("err = %v", err)
		}
	})
}

func TestInterruptStopsOnlyTheCurrentTurnAndParksQueuedMessages(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	sc := newScript().add("child", g.reply("never")).text("child", "B", "C", "D")
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	g.waitEntered(t, ctx)
	for _, m := range []string{"parked B", "parked C"} {
		if _, err := st.Runtime.Followup(ctx, parent, id, text(m)); err != nil {
			t.Fatal(err)
		}
	}
	child := st.Live(id)
	if err := st.Runtime.Interrupt(id, subagent.UserAuthority("parent")); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ctx, child)
	// The idle callback scheduled a settlement attempt before WaitIdle
	// returned; wait for its outcome so residency is asserted after it.
	subagent.WaitSettled(st.Runtime)
	if got := child.ParkedCount(); got != 2 {
		t.Errorf("parked = %d, want 2", got)
	}
	if !st.Runtime.Resident(id) || st.Live(id) != child {
		t.Error("interrupted child with parked messages must stay resident")
	}
	if n := count(child.Session().MustEvents(), session.TypeStepStart); n != 1 {
		t.Errorf("model steps after interrupt = %d, want 1", n)
	}
	if _, err := st.Runtime.Followup(ctx, parent, id, text("waking D")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, id, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, id)
	if got := strings.Join(userTexts(evs, ""), "|"); got != "task: child|parked B|parked C|waking D" {
		t.Errorf("user texts = %s", got)
	}
	if got := strings.Join(turnEnds(evs), ","); got != "aborted,completed,completed,completed" {
		t.Errorf("turn ends = %s", got)
	}
	for _, ev := range evs {
		if ev.Type == session.TypeTurnEnd {
			d, _ := session.DecodeData[session.TurnEndData](ev)
			if d.Reason.Kind == "aborted" && (d.Reason.Reason == nil || d.Reason.Reason.Kind != "user") {
				t.Errorf("aborted turn cause = %+v, want user", d.Reason.Reason)
			}
			break
		}
	}
}

func TestInterruptAuthority(t *testing.T) {
	ctx := testCtx(t)
	ga, gb := newGate(), newGate()
	sc := newScript().add("a", ga.reply("A")).add("b", gb.reply("B"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	parent := st.NewParent(t, "parent")
	stranger := st.NewParent(t, "stranger")
	a, _ := startChild(t, ctx, st.Runtime, parent, "a")
	b, _ := startChild(t, ctx, st.Runtime, parent, "b")
	ga.waitEntered(t, ctx)
	gb.waitEntered(t, ctx)
	defer ga.open()
	defer gb.open()
	agentA, agentB := st.Live(a), st.Live(b)

	tests := []struct {
		name string
		auth subagent.Authority
		want string
	}{
		{"self", subagent.AncestorAuthority(agentA), `agent "` + a + `" cannot interrupt itself`},
		{"sibling", subagent.AncestorAuthority(agentB), `subagent "` + a + `" is not a live descendant of agent "` + b + `"`},
		{"stranger", subagent.AncestorAuthority(stranger), `subagent "` + a + `" is not a live descendant of agent "stranger"`},
		{"wrong user parent", subagent.UserAuthority("stranger"), `subagent "` + a + `" belongs to another parent session`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := st.Runtime.Interrupt(a, tt.auth)
			if !subagent.HasCode(err, subagent.CodeUnauthorized) || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("stale ancestor, even for an absent target", func(t *testing.T) {
		ghost := agent.New(parent.Session(), agent.Options{})
		err := st.Runtime.Interrupt("no-such-agent", subagent.AncestorAuthority(ghost))
		if !subagent.HasCode(err, subagent.CodeUnauthorized) || !strings.Contains(err.Error(), "requires the exact live ancestor agent") {
			t.Errorf("err = %v", err)
		}
	})
	if agentA.Status() != agent.StatusRunning {
		t.Error("a refused interrupt cancelled the target")
	}
	t.Run("absent target is an accepted no-op", func(t *testing.T) {
		if err := st.Runtime.Interrupt("no-such-agent", subagent.AncestorAuthority(parent)); err != nil {
			t.Error(err)
		}
	})
}

func TestInterruptOfASettledChildIsANoOpWithoutColdResume(t *testing.T) {
	ctx := testCtx(t)
	st, _ := durableStack(t, t.TempDir(), newScript().text("child", "ok").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	for _, auth := range []subagent.Authority{subagent.AncestorAuthority(parent), subagent.UserAuthority("parent")} {
		if err := st.Runtime.Interrupt(id, auth); err != nil {
			t.Error(err)
		}
	}
	if st.Runtime.Resident(id) || st.Live(id) != nil {
		t.Error("interrupt rematerialized a settled child")
	}
}

// C99, C77: a deep ancestor's interrupt cancels the grandchild with cause
// parent; its settlement notice reaches the middle child while the middle
// child still owns it (the notice is sent before the ownership release,
// so the middle child cannot settle in between).
func TestInterruptByADeepAncestorCancelsWithParentCause(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	sc := newScript().add("child", gc.reply("child done")).add("grand", gg.reply("never"))
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	ownedAtInsert := make(chan bool, 1)
	unsub := st.Live(c).Session().Subscribe(func(_ *session.Session, ev session.Event) {
		if ev.Type != session.TypeInboxSpliced {
			return
		}
		d, _ := session.DecodeData[session.InboxSplicedData](ev)
		if len(d.Inserted) == 1 && d.Inserted[0].Source.Kind == "subagent-settled" {
			ownedAtInsert <- subagent.Owns(st.Runtime, c, g)
		}
	})
	defer unsub()
	if err := st.Runtime.Interrupt(g, subagent.AncestorAuthority(parent)); err != nil {
		t.Fatal(err)
	}
	gc.open()
	lc.waitEnds(t, ctx, g, 1)
	lc.waitEnds(t, ctx, c, 1)
	_, evs := persistedEvents(t, ctx, durable{ps}, g)
	for _, ev := range evs {
		if ev.Type == session.TypeTurnEnd {
			d, _ := session.DecodeData[session.TurnEndData](ev)
			if d.Reason.Kind != "aborted" || d.Reason.Reason == nil || d.Reason.Reason.Kind != "parent" {
				t.Errorf("grandchild turn end = %+v", d.Reason)
			}
		}
	}
	select {
	case owned := <-ownedAtInsert:
		if !owned {
			t.Error("at the notice's inbox insert the middle child no longer owned the grandchild")
		}
	default:
		t.Error("the middle child's inbox never got the notice")
	}
	// The child got the grandchild's notice before it settled.
	_, cevs := persistedEvents(t, ctx, durable{ps}, c)
	if got := userTexts(cevs, "subagent-settled"); len(got) != 1 || !strings.Contains(got[0], "was stopped before it finished.") {
		t.Errorf("child notices = %q", got)
	}
}

func TestWaitingChildStaysResidentUntilItsGrandchildSettles(t *testing.T) {
	ctx := testCtx(t)
	gg := newGate()
	sc := newScript().text("child", "child answer", "child saw grandchild").add("grand", gg.reply("grand answer"))
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	// The child starts its grandchild from inside its first turn.
	gotGrand := make(chan string, 1)
	childIDs := make(chan string, 1)
	sc.replies["child"][0] = func(context.Context) ([]session.Chunk, error) {
		child := st.Live(<-childIDs)
		g, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "grand", Prompt: text("deep"), Parent: child})
		if err != nil {
			return nil, err
		}
		gotGrand <- g
		return subagenttest.Text("child answer"), nil
	}
	c, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("task"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	childIDs <- c
	child := st.Live(c)
	var g string
	select {
	case g = <-gotGrand:
	case <-ctx.Done():
		t.Fatal("grandchild never started")
	}
	gg.waitEntered(t, ctx)
	waitIdle(t, ctx, child)
	if !st.Runtime.Resident(c) {
		t.Fatal("a child owning a running grandchild settled")
	}
	gg.open()
	lc.waitEnds(t, ctx, g, 1)
	ends := lc.waitEnds(t, ctx, c, 1)
	if ends[0].StopReason != "completed" || session.JoinText(ends[0].LastAssistantMessage, "") != "child saw grandchild" {
		t.Errorf("child end = %+v", ends[0])
	}
	// C27: the top-level parent is no Activation and is left alone: still
	// registered, its session live, never settled or taken down.
	waitIdle(t, ctx, parent)
	if st.Runtime.Resident("parent") || st.Live("parent") != parent {
		t.Error("the top-level parent became an Activation or left the registry")
	}
	if _, ok := st.Sessions.Get("parent"); !ok {
		t.Error("the top-level parent's session left the live store")
	}
	if _, err := parent.Followup(session.Message{Content: text("still here")}); err != nil {
		t.Errorf("the top-level parent no longer accepts work: %v", err)
	}
	for _, ev := range lc.all() {
		if ev.ID == "parent" {
			t.Errorf("lifecycle event for the top-level parent: %+v", ev)
		}
	}
}

func TestManagerDrainDisposesChildFirstAndInjectsTheNotice(t *testing.T) {
	ctx := testCtx(t)
	gc, gg := newGate(), newGate()
	sc := newScript().add("child", gc.reply("never")).add("grand", gg.reply("never"))
	st, ps := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	c, g := startHeldChildAndGrandchild(t, ctx, st, parent, gc, gg)
	// C31: child first is the order of release (the session leaving the
	// live store), not only of the end edges: a parent released before
	// its children still ends after them.
	var (
		mu       sync.Mutex
		released []string
	)
	unobserve := st.Sessions.Observe(&session.Observer{Removed: func(s *session.Session) {
		mu.Lock()
		released = append(released, s.ID())
		mu.Unlock()
	}})
	defer unobserve()

	if err := st.Runtime.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(released) != 2 || released[0] != g || released[1] != c {
		t.Errorf("release order = %v, want grandchild %s then child %s", released, g, c)
	}
	mu.Unlock()
	var order []string
	for _, ev := range lc.all() {
		if ev.Type == subagent.EventEnd {
			order = append(order, ev.ID)
			if ev.StopReason != "aborted" {
				t.Errorf("%s stop = %s", ev.ID, ev.StopReason)
			}
		}
	}
	if len(order) != 2 || order[0] != g || order[1] != c {
		t.Errorf("end order = %v, want grandchild then child", order)
	}
	if st.Runtime.ResidentCount() != 0 {
		t.Error("activations left after drain")
	}
	pevs := parent.Session().MustEvents()
	if got := userTexts(pevs, ""); len(got) != 0 {
		t.Errorf("parent ran a turn on the notice: %q", got)
	}
	if n := count(pevs, session.TypeTurnStart); n != 0 {
		t.Errorf("parent turns = %d, want 0", n)
	}
	var injected string
	for _, ev := range pevs {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			if len(d.Inserted) == 1 {
				injected = session.JoinText(d.Inserted[0].Content, "\n")
			}
		}
	}
	if want := "Background subagent " + c + " was stopped before it finished.\nIt left no closing message."; injected != want {
		t.Errorf("injected notice = %q", injected)
	}
	if parent.Status() != agent.StatusIdle {
		t.Error("parent woke on the drain notice")
	}
	for _, id := range []string{c, g} {
		if _, _, err := (durable{ps}).Inspect(ctx, id); err != nil {
			t.Errorf("session %s did not survive the drain: %v", id, err)
		}
	}
	// Admission stays closed.
	if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "x", Prompt: text("x"), Parent: parent}); !subagent.HasCode(err, subagent.CodeDraining) {
		t.Errorf("start after drain: %v", err)
	}
	if _, err := st.Runtime.Followup(ctx, parent, c, text("x")); !subagent.HasCode(err, subagent.CodeDraining) {
		t.Errorf("follow-up after drain: %v", err)
	}
}

func TestDrainDescendantsTakesDownOnlyTheRootsForest(t *testing.T) {
	ctx := testCtx(t)
	ga, gb := newGate(), newGate()
	sc := newScript().add("a", ga.reply("never")).add("b", gb.reply("B done")).text("b", "B again")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	pa := st.NewParent(t, "parent-a")
	pb := st.NewParent(t, "parent-b")
	a, _ := startChild(t, ctx, st.Runtime, pa, "a")
	b, _ := startChild(t, ctx, st.Runtime, pb, "b")
	ga.waitEntered(t, ctx)
	gb.waitEntered(t, ctx)

	if err := st.Runtime.DrainDescendants(ctx, pa); err != nil {
		t.Fatal(err)
	}
	if ends := lc.waitEnds(t, ctx, a, 1); ends[0].StopReason != "aborted" {
		t.Errorf("a stop = %s", ends[0].StopReason)
	}
	if !st.Runtime.Resident(b) {
		t.Error("sibling parent's child was taken down")
	}
	if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "x", Prompt: text("x"), Parent: pa}); !subagent.HasCode(err, subagent.CodeDraining) ||
		err.Error() != `continuable subagents below parent "parent-a" are draining; the operation was not admitted` {
		t.Errorf("start under drained root: %v", err)
	}
	if _, err := st.Runtime.Followup(ctx, pb, b, text("more")); err != nil {
		t.Errorf("follow-up to the other forest: %v", err)
	}
	gb.open()
	lc.waitEnds(t, ctx, b, 1)
}

func TestReportReachesTheParentAsARelayedMessage(t *testing.T) {
	ctx := testCtx(t)
	g := newGate()
	sc := newScript().
		call("child", "r1", "report", map[string]string{"output": "halfway there"}).
		add("child", g.reply("done")).
		text("main", "seen report", "seen notice")
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	// The report woke the parent before the child's last step; the child
	// settles only after the parent's report turn ended.
	g.waitEntered(t, ctx)
	waitIdle(t, ctx, parent)
	g.open()
	lc.waitEnds(t, ctx, id, 1)
	waitIdle(t, ctx, parent)
	var report *session.Message
	for _, m := range userMessages(parent.Session().MustEvents()) {
		if m.Source.Kind == "subagent-report" {
			report = &m
			break
		}
	}
	if report == nil {
		t.Fatal("parent never got the report")
	}
	if got := session.JoinText(report.Content, "\n"); got != "Background subagent "+id+" reported:\nhalfway there" {
		t.Errorf("report = %q", got)
	}
	if report.Source.Form != "relay" || report.Source.SenderSessionID != id {
		t.Errorf("report source = %+v", report.Source)
	}
	// C63: the settlement notice follows the report, in its own turn
	// after the report's.
	evs := parent.Session().MustEvents()
	notices := userTexts(evs, "subagent-settled")
	want := "Background subagent " + id + " finished and will do no further work unless you send it more.\nIts closing message:\ndone"
	if len(notices) != 1 || notices[0] != want {
		t.Errorf("notices = %q, want [%q]", notices, want)
	}
	if got := strings.Join(userTexts(evs, ""), "|"); !strings.HasPrefix(got, "Background subagent "+id+" reported:") {
		t.Errorf("parent user texts = %q: the report must come first", got)
	}
	if n := count(evs, session.TypeTurnStart); n != 2 {
		t.Errorf("parent turns = %d, want 2 (report, then notice)", n)
	}
}

func TestStartContinuablePreconditions(t *testing.T) {
	ctx := testCtx(t)
	t.Run("no persistence", func(t *testing.T) {
		st := subagenttest.New(t, subagenttest.Config{Model: newScript().model()})
		_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "x", Parent: st.NewParent(t, "p")})
		if !subagent.HasCode(err, subagent.CodePersistenceUnavailable) || !strings.Contains(err.Error(), "require session persistence") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no agents registry", func(t *testing.T) {
		rt := subagent.New(subagent.Options{Sessions: session.NewStore(nil)})
		if _, _, err := rt.StartContinuable(ctx, subagent.ContinuableSpec{}); !subagent.HasCode(err, subagent.CodeContinuationUnavailable) {
			t.Errorf("start: %v", err)
		}
		if _, err := rt.Followup(ctx, nil, "x", nil); !subagent.HasCode(err, subagent.CodeContinuationUnavailable) {
			t.Errorf("followup: %v", err)
		}
		if err := rt.Interrupt("x", subagent.UserAuthority("p")); err != nil {
			t.Errorf("interrupt: %v", err)
		}
		if err := rt.DrainDescendants(ctx); err != nil {
			t.Errorf("drain: %v", err)
		}
	})
	st, _ := durableStack(t, t.TempDir(), newScript().text("dup", "ok").model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	t.Run("max depth", func(t *testing.T) {
		_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "x", Parent: parent, MaxDepth: subagent.Depth(0)})
		var de *subagent.SubagentDepthError
		if !errors.As(err, &de) || err.Error() != "subagent depth 1 exceeds maxDepth 0" {
			t.Errorf("err = %v", err)
		}
		if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "x", Parent: parent, MaxDepth: subagent.Depth(-1)}); err == nil ||
			!strings.Contains(err.Error(), "non-negative safe integer") {
			t.Errorf("negative maxDepth: %v", err)
		}
	})
	t.Run("provider without continuable support", func(t *testing.T) {
		unreg, _ := st.Runtime.RegisterProvider(&stub{name: "plain"})
		defer unreg()
		_, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "plain", Label: "x", Parent: parent})
		if !subagent.HasCode(err, subagent.CodeUnsupportedCapability) || !strings.Contains(err.Error(), "does not support continuable children") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("duplicate reserved id", func(t *testing.T) {
		spec := subagent.ContinuableSpec{Provider: "spawn", Label: "dup", ChildID: "reserved-child", Prompt: text("x"), Parent: parent}
		if _, _, err := st.Runtime.StartContinuable(ctx, spec); err != nil {
			t.Fatal(err)
		}
		lc.waitEnds(t, ctx, "reserved-child", 1)
		_, _, err := st.Runtime.StartContinuable(ctx, spec)
		if !subagent.HasCode(err, subagent.CodeDuplicateChild) || err.Error() != `subagent "reserved-child" already exists` {
			t.Errorf("persisted duplicate: %v", err)
		}
		if st.Runtime.Resident("reserved-child") {
			t.Error("duplicate start rematerialized the child")
		}
	})
	if st.Runtime.ResidentCount() != 0 {
		t.Error("failed starts left activations")
	}
}

// externalNamed is the spawn driver under the external driver's name (the
// real one lives in driver/external, which this package cannot import).
type externalNamed struct{ *inprocess.Provider }

func (externalNamed) Name() string { return subagent.ExternalProvider }

// An external agent's child that fails says why in its settlement notice
// (our own children keep the contract's text, C68).
func TestExternalChildNoticeSaysTheCause(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript()
	sc.add("ext", func(context.Context) ([]session.Chunk, error) {
		return nil, errors.New("external agent helper exited (exit status 3)")
	})
	ps := mustPersistence(t)
	st := subagenttest.New(t, subagenttest.Config{Model: sc.model(), Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}})
	if _, err := st.Runtime.RegisterProvider(externalNamed{inprocess.Spawn()}); err != nil {
		t.Fatal(err)
	}
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: subagent.ExternalProvider, Label: "ext", Prompt: text("task"), Parent: parent,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ends := lc.waitEnds(t, ctx, id, 1); ends[0].StopReason != "error" {
		t.Fatalf("stop = %s", ends[0].StopReason)
	}
	waitIdle(t, ctx, parent)
	msgs := userMessages(parent.Session().MustEvents())
	want := "Background subagent " + id + " failed before it finished.\nCause: external agent helper exited (exit status 3)\nIt left no closing message."
	if len(msgs) == 0 || session.JoinText(msgs[0].Content, "\n") != want {
		t.Fatalf("notice = %+v\nwant %q", msgs, want)
	}
}
