package inprocess_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func text(s string) []session.Block { return []session.Block{session.Text(s)} }

// replies answers by ScriptKey with a fixed reply function.
func replies(m map[string]subagenttest.Responder) *subagenttest.FuncModel {
	return &subagenttest.FuncModel{Fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		if fn, ok := m[req.Caller.ScriptKey]; ok {
			return fn(ctx, req)
		}
		return subagenttest.Text("(unscripted)"), nil
	}}
}

func say(s string) subagenttest.Responder {
	return func(context.Context, model.Request) ([]session.Chunk, error) { return subagenttest.Text(s), nil }
}

func start(t *testing.T, ctx context.Context, st *subagenttest.Stack, provider string, req subagent.OneShotRequest) *driver.Run {
	t.Helper()
	run, err := st.Runtime.Start(ctx, provider, req)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return run
}

func TestOneShotDescriptorIsAppendedInsideTheFirstTurnBeforeTheModelRequest(t *testing.T) {
	ctx := testCtx(t)
	var st *subagenttest.Stack
	var atRequest []session.Event
	var mu sync.Mutex
	m := replies(map[string]subagenttest.Responder{"child task": func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		s, _ := st.Sessions.Get(req.Caller.SessionID)
		mu.Lock()
		atRequest = s.MustEvents()
		mu.Unlock()
		return subagenttest.Text("driver answer"), nil
	}})
	st = subagenttest.New(t, subagenttest.Config{Model: m})
	parent := st.NewParent(t, "parent")
	run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "child task", Prompt: text("child task"), Parent: parent})
	if _, err := run.Result(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	evs := atRequest
	mu.Unlock()
	ts, ds := indexOf(evs, session.TypeTurnStart), indexOf(evs, session.TypeDescriptor)
	if ts < 0 || ds < ts {
		t.Fatalf("descriptor at %d, turn/start at %d (when the model was called)", ds, ts)
	}
	if string(evs[ds].Data) != `{"version":2,"mode":"one-shot","provider":"spawn","label":"child task"}` {
		t.Errorf("descriptor = %s", evs[ds].Data)
	}
	all := run.LocalAgent.Session().MustEvents()
	if n := count(all, session.TypeDescriptor); n != 1 {
		t.Errorf("descriptors = %d", n)
	}
	if first := indexOf(all, session.TypeAssistantChunk); first >= 0 && first < ds {
		t.Error("model output precedes the descriptor")
	}
	_ = run.Dispose(ctx)
}

func TestOneShotRunPublishesCompletesAndDisposesIdempotently(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"child task": say("driver answer")})})
	parent := st.NewParent(t, "parent")
	run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "child task", Prompt: text("child task"), Parent: parent})
	if st.Live(run.ID) != run.LocalAgent || run.LocalAgent == nil {
		t.Fatal("child not registered at return")
	}
	res, err := run.Result(ctx)
	if err != nil || res.StopReason != "completed" || session.JoinText(res.Output, "") != "driver answer" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	h := run.LocalAgent.Session().Header()
	if h.Origin != "subagent" || h.DelegationDepth != 1 || h.ParentSession != "parent" || h.Cwd != "/workspace" {
		t.Errorf("header = %+v", h)
	}
	if run.LocalAgent.Options().Route != (model.Route{Provider: "mock", Model: "mock"}) {
		t.Errorf("child route = %+v", run.LocalAgent.Options().Route)
	}
	for range 2 {
		if err := run.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st.Live(run.ID) != nil {
		t.Error("child still registered after dispose")
	}
	if _, ok := st.Sessions.Get(run.ID); ok {
		t.Error("child session still live after dispose")
	}
}

func TestOneShotStopReasons(t *testing.T) {
	reject := func(ctx context.Context, a *agent.Agent, s agent.StepInfo) (agent.Decision, error) {
		if a.Options().ScriptKey == "refuse" {
			return agent.Reject, nil
		}
		return agent.Enter, nil
	}
	m := replies(map[string]subagenttest.Responder{
		"long": func(context.Context, model.Request) ([]session.Chunk, error) {
			return subagenttest.Truncated("partial one"), nil
		},
		"fail": func(context.Context, model.Request) ([]session.Chunk, error) { return nil, errors.New("model down") },
	})
	tests := []struct {
		label, stop, output string
	}{
		{"refuse", "refusal", ""},
		{"long", "max-tokens", "partial one"},
		{"fail", "error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			ctx := testCtx(t)
			st := subagenttest.New(t, subagenttest.Config{Model: m, ChildPreStep: []agent.PreStepHook{reject}})
			parent := st.NewParent(t, "parent")
			run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: tt.label, Prompt: text("x"), Parent: parent})
			defer run.Dispose(ctx)
			res, err := run.Result(ctx)
			if err != nil || res.StopReason != tt.stop || session.JoinText(res.Output, "") != tt.output {
				t.Errorf("result = %+v, %v", res, err)
			}
			if tt.label == "refuse" && count(run.LocalAgent.Session().MustEvents(), session.TypeDescriptor) != 0 {
				t.Error("a rejected first step still appended the descriptor")
			}
		})
	}
}

func TestForkOneShotSeesTheParentsCompletedTurnsButReturnsOnlyItsOwnOutput(t *testing.T) {
	ctx := testCtx(t)
	var childHistory []model.Message
	var mu sync.Mutex
	m := replies(map[string]subagenttest.Responder{
		"main": say("parent answer"),
		"fork": func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
			mu.Lock()
			childHistory = req.Messages
			mu.Unlock()
			return subagenttest.Text("child answer"), nil
		},
	})
	st := subagenttest.New(t, subagenttest.Config{Model: m})
	parent := st.NewParent(t, "parent")
	if _, err := parent.Prompt(ctx, session.Message{Content: text("hello")}); err != nil {
		t.Fatal(err)
	}
	seed := parent.Session().MustEvents()
	run := start(t, ctx, st, "fork", subagent.OneShotRequest{Label: "fork", Prompt: text("continue"), Parent: parent})
	defer run.Dispose(ctx)
	res, err := run.Result(ctx)
	if err != nil || session.JoinText(res.Output, "") != "child answer" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	evs := run.LocalAgent.Session().MustEvents()
	if h := run.LocalAgent.Session().Header(); h.SeedLength != len(seed) {
		t.Errorf("seedLength = %d, want %d", h.SeedLength, len(seed))
	}
	for i := range seed {
		if evs[i].Type != seed[i].Type || string(evs[i].Data) != string(seed[i].Data) {
			t.Fatalf("child event %d differs from the seed", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(childHistory) != 3 || session.JoinText(childHistory[1].Content, "") != "parent answer" {
		t.Errorf("fork child history = %+v", childHistory)
	}
}

func TestOneShotDepthLimits(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(nil)})
	s, err := st.Sessions.Create(session.Header{ID: "deep", DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deep := st.Register(t, s)
	_, err = st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Parent: deep, MaxDepth: subagent.Depth(1)})
	var de *subagent.SubagentDepthError
	if !errors.As(err, &de) || de.AttemptedDepth != 2 || de.MaxDepth != 1 {
		t.Errorf("err = %v", err)
	}
	parent := st.NewParent(t, "parent")
	if _, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Parent: parent, MaxDepth: subagent.Depth(0)}); !errors.As(err, &de) ||
		err.Error() != "subagent depth 1 exceeds maxDepth 0" {
		t.Errorf("maxDepth 0: %v", err)
	}
	if len(st.Sessions.List()) != 2 {
		t.Error("a refused start created a session")
	}
}

func TestOneShotAbortedBeforePublicationCreatesNothing(t *testing.T) {
	st := subagenttest.New(t, subagenttest.Config{Model: replies(nil)})
	parent := st.NewParent(t, "parent")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Parent: parent}); !errors.Is(err, inprocess.ErrAbortedBeforePublication) ||
		!strings.Contains(err.Error(), "aborted before child publication") {
		t.Errorf("err = %v", err)
	}
	if len(st.Sessions.List()) != 1 || len(st.Agents.List()) != 1 {
		t.Error("an aborted start left a child")
	}
}

func TestOneShotCancelledAfterPublicationEndsAbortedByParent(t *testing.T) {
	hang := func(ctx context.Context, _ model.Request) ([]session.Chunk, error) {
		<-ctx.Done()
		return []session.Chunk{{Type: session.ChunkText, Text: "partial"}}, context.Cause(ctx)
	}
	t.Run("signal", func(t *testing.T) {
		entered := make(chan struct{})
		var once sync.Once
		st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"hang": func(ctx context.Context, r model.Request) ([]session.Chunk, error) {
			once.Do(func() { close(entered) })
			return hang(ctx, r)
		}})})
		parent := st.NewParent(t, "parent")
		ctx, cancel := context.WithCancel(testCtx(t))
		run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "hang", Prompt: text("x"), Parent: parent})
		<-entered
		cancel()
		res, err := run.Result(testCtx(t))
		if err != nil || res.StopReason != "aborted" || session.JoinText(res.Output, "") != "partial" {
			t.Errorf("result = %+v, %v", res, err)
		}
		var reason *session.AbortReason
		for _, ev := range run.LocalAgent.Session().MustEvents() {
			if ev.Type == session.TypeTurnEnd {
				d, _ := session.DecodeData[session.TurnEndData](ev)
				reason = d.Reason.Reason
			}
		}
		if reason == nil || reason.Kind != "parent" {
			t.Errorf("turn end cause = %+v", reason)
		}
		_ = run.Dispose(testCtx(t))
	})
	// The parent's signal ends while the child is being published, after
	// Start's own abort check: the prompt must still be cancelled, whether
	// or not the child's loop claimed it already (before the fix the
	// cancellation could reach the child before its prompt was queued and
	// be lost, leaving a foreground delegation waiting on a hung child).
	t.Run("signal during publication", func(t *testing.T) {
		st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"hang": hang})})
		parent := st.NewParent(t, "parent")
		for range 50 {
			ctx, cancel := context.WithCancel(testCtx(t))
			unobserve := st.Sessions.Observe(&session.Observer{Created: func(s *session.Session, _ bool) {
				if s.Header().ParentSession == "parent" {
					cancel()
				}
			}})
			run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "hang", Prompt: text("x"), Parent: parent})
			unobserve()
			res, err := run.Result(testCtx(t))
			if err != nil || res.StopReason != "aborted" {
				t.Fatalf("result = %+v, %v", res, err)
			}
			if err := run.Dispose(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("dispose", func(t *testing.T) {
		st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"hang": hang})})
		parent := st.NewParent(t, "parent")
		run := start(t, testCtx(t), st, "spawn", subagent.OneShotRequest{Label: "hang", Prompt: text("x"), Parent: parent})
		if err := run.Dispose(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if res, _ := run.Result(testCtx(t)); res.StopReason != "aborted" {
			t.Errorf("stop = %s", res.StopReason)
		}
	})
}

// releaseRefusing is a session persister whose Release of any session
// but the parent's fails (after which the session is gone all the same).
type releaseRefusing struct{}

func (releaseRefusing) Open(session.Header, []session.Event, bool) error { return nil }
func (releaseRefusing) Appended(*session.Session, session.Event)         {}
func (releaseRefusing) Release(id string) error {
	if id == "parent" {
		return nil
	}
	return errors.New("storage refused the release")
}

// #131: a published child whose prompt cannot be delivered (its agent was
// closed before the driver delivered it: the real Followup fails) and
// whose handle disposal fails (the storage refuses the session's release)
// fails the foreground tool with both errors; the child was published and
// is released, the registry and the store hold only the parent again.
func TestPromptDeliveryAndReleaseFailuresAreBothReportedByTheForegroundTool(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{
		Model:  replies(nil),
		Attach: func(s *session.Store) { s.SetPersister(releaseRefusing{}) },
		WrapFactory: func(next subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				a, err := next(s, spec)
				if err == nil {
					err = a.Close(context.Background())
				}
				return a, err
			}
		},
	})
	parent := st.NewParent(t, "parent")
	var (
		mu        sync.Mutex
		published []string
	)
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart {
			mu.Lock()
			published = append(published, ev.ID)
			mu.Unlock()
		}
	})
	res := parent.Tools().Execute(ctx, tool.Invocation{CallID: "c1", Name: "subagent", Caller: parent,
		Arguments: []byte(`{"description":"Undeliverable","prompt":"This child prompt is never delivered.","run_in_background":false}`)})
	got := session.JoinText(res.Content, "")
	if !res.IsError || !strings.HasPrefix(got, "Error: subagent run failed: "+agent.ErrClosed.Error()+"; dispose failed: ") ||
		!strings.Contains(got, "storage refused the release") {
		t.Errorf("result = %q (error %v), want the delivery failure and the release failure", got, res.IsError)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(published) != 1 {
		t.Fatalf("published children = %v, want one", published)
	}
	if st.Live(published[0]) != nil || len(st.Agents.List()) != 1 || len(st.Sessions.List()) != 1 {
		t.Error("the failed child was not released")
	}
}

// The scenario subagent-published-run-failure pins the rendering of both
// failures through the driver's fault hook (Faults); this test keeps that
// hook honest. #131 itself is held by the real failures above.
func TestPublishedRunAndDisposeFailuresAreBothReportedByTheForegroundTool(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(nil), Faults: inprocess.Faults{
		PublishedRunError: "snapshot published run failed", DisposeError: "snapshot published handle disposal failed",
	}})
	parent := st.NewParent(t, "parent")
	var childID string
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventStart {
			childID = ev.ID
		}
	})
	res := tool.Result{}
	reg := parent.Tools()
	res = reg.Execute(ctx, tool.Invocation{CallID: "c1", Name: "subagent", Caller: parent,
		Arguments: []byte(`{"description":"Fail published run","prompt":"This child prompt must never run.","run_in_background":false}`)})
	want := "Error: subagent run failed: snapshot published run failed; dispose failed: snapshot published handle disposal failed"
	if !res.IsError || session.JoinText(res.Content, "") != want {
		t.Errorf("result = %+v", res)
	}
	if childID == "" {
		t.Fatal("the child was never published")
	}
	if st.Live(childID) != nil || len(st.Agents.List()) != 1 || len(st.Sessions.List()) != 1 {
		t.Error("the failed child was not released")
	}
}

func TestForegroundDelegationReportsProgressWithTheChildLink(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"look": say("found it")})})
	parent := st.NewParent(t, "parent")
	var mu sync.Mutex
	var got []tool.Progress
	res := parent.Tools().Execute(ctx, tool.Invocation{CallID: "c1", Name: "subagent", Caller: parent,
		Arguments: []byte(`{"description":"look","prompt":"find it","run_in_background":false}`),
		Progress: func(p tool.Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}})
	if res.IsError || session.JoinText(res.Content, "") != "found it" {
		t.Fatalf("result = %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress reported")
	}
	// The child's first state goes at once with the link (later ones are
	// throttled); its final digest comes with the result.
	first := got[0]
	meta, _ := first.Meta[subagent.ProgressMetaKey].(map[string]any)
	if first.Text != "turn 1" || meta["mode"] != "one-shot" || meta["depth"] != 1 || meta["childSessionId"] == "" {
		t.Errorf("progress = %+v", first)
	}
	if res.Display == nil || res.Display.Text != "turn 1\n> found it\noutcome: completed" {
		t.Errorf("result display = %+v", res.Display)
	}
}

// Event lookups shared with the other subagent test packages.
var (
	indexOf = subagenttest.IndexOf
	count   = subagenttest.Count
)
