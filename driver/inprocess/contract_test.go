package inprocess_test

// In-process driver contract gaps (subagent-contract.md §5.6; map in
// subagent/CONTRACT_TESTS.md).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// #143: a tool filter naming a tool that does not exist is refused
// "unknown global tool" and leaves no agent or session; one naming a real
// tool removes it from the child.
func TestToolFilterNamingAnUnknownToolIsRefused(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{"child task": say("ok")})})
	parent := st.NewParent(t, "parent")
	_, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Label: "child task", Prompt: text("x"), Parent: parent,
		ToolFilter: &subagent.ToolFilter{Deny: []string{"unknown-tool"}}})
	if !subagent.HasCode(err, subagent.CodeInvalidRequest) || !strings.Contains(err.Error(), `unknown global tool "unknown-tool"`) {
		t.Fatalf("err = %v", err)
	}
	if len(st.Sessions.List()) != 1 || len(st.Agents.List()) != 1 {
		t.Errorf("a refused filter left %d sessions, %d agents", len(st.Sessions.List()), len(st.Agents.List()))
	}
	for _, f := range []*subagent.ToolFilter{{Deny: []string{"send_message"}}, {Allow: []string{"report"}}} {
		run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "child task", Prompt: text("x"), Parent: parent, ToolFilter: f})
		names := strings.Join(run.LocalAgent.Tools().Names(), ",")
		if strings.Contains(names, "send_message") {
			t.Errorf("filter %+v: child tools %s", f, names)
		}
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		if err := run.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// #136: the child inherits the parent's token limit; the request's own
// limit overrides it.
func TestOneShotMaxTokensInheritOrOverride(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	seen := map[string]int{}
	m := &subagenttest.FuncModel{Fn: func(_ context.Context, req model.Request) ([]session.Chunk, error) {
		mu.Lock()
		seen[req.Caller.ScriptKey] = req.MaxTokens
		mu.Unlock()
		return subagenttest.Text("ok"), nil
	}}
	st := subagenttest.New(t, subagenttest.Config{Model: m})
	sess, err := st.Sessions.Create(session.Header{ID: "parent", Cwd: "/workspace"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := agent.New(sess, agent.Options{Model: m, Route: model.Route{Provider: "mock", Model: "mock"}, MaxTokens: 111, Tools: st.Tools(0, false)})
	if err := st.Agents.Register(parent); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		label string
		max   int
		want  int
	}{{"inherit", 0, 111}, {"override", 222, 222}} {
		run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: tt.label, Prompt: text("x"), Parent: parent, MaxTokens: tt.max})
		if _, err := run.Result(ctx); err != nil {
			t.Fatal(err)
		}
		if got := run.LocalAgent.Options().MaxTokens; got != tt.want {
			t.Errorf("%s: child option = %d, want %d", tt.label, got, tt.want)
		}
		mu.Lock()
		got := seen[tt.label]
		mu.Unlock()
		if got != tt.want {
			t.Errorf("%s: child request = %d, want %d", tt.label, got, tt.want)
		}
		if err := run.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// #133, C52: a usage-only step cut off by the token limit after a text
// step ends max-tokens with the text step's output; a cut-off step with
// text and a tool call keeps both.
func TestMaxTokensStepOutputFollowsTheLastNonEmptyMessage(t *testing.T) {
	step1 := []session.Chunk{
		{Type: session.ChunkText, Text: "partial one"},
		{Type: session.ChunkToolCall, Index: 0, ID: "t1", Name: "list_agents", Arguments: `{}`},
	}
	tests := []struct {
		name   string
		finish string
		then   []session.Chunk
		want   []string
	}{
		{"usage-only step after a text step", model.FinishToolCalls, []session.Chunk{{Type: session.ChunkFinish, Finish: model.FinishLength}}, []string{"text:partial one", "tool-call:t1"}},
		{"tool-only final step", model.FinishLength, nil, []string{"text:partial one", "tool-call:t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			m := &subagenttest.FuncModel{Fn: func(_ context.Context, req model.Request) ([]session.Chunk, error) {
				if req.Caller.Call == 0 {
					return append(append([]session.Chunk(nil), step1...), session.Chunk{Type: session.ChunkFinish, Finish: tt.finish}), nil
				}
				return tt.then, nil
			}}
			st := subagenttest.New(t, subagenttest.Config{Model: m})
			parent := st.NewParent(t, "parent")
			run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: "long", Prompt: text("x"), Parent: parent})
			defer run.Dispose(ctx)
			res, err := run.Result(ctx)
			if err != nil || res.StopReason != "max-tokens" {
				t.Fatalf("result = %+v, %v", res, err)
			}
			var got []string
			for _, b := range res.Output {
				switch b.Type {
				case "text":
					got = append(got, "text:"+b.Text)
				default:
					got = append(got, b.Type+":"+b.ID)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("output = %v, want %v", got, tt.want)
			}
		})
	}
}

// #130, #132: a foreground one-shot run never asks persistence for the
// final flush the continuation manager does (no flush before its result).
func TestOneShotRunNeverCallsTheFinalFlush(t *testing.T) {
	ctx := testCtx(t)
	d := &countingDurable{}
	st := subagenttest.New(t, subagenttest.Config{Model: replies(map[string]subagenttest.Responder{
		"ok": say("done"),
		"long": func(context.Context, model.Request) ([]session.Chunk, error) {
			return subagenttest.Truncated("half"), nil
		},
	}), Durable: d})
	parent := st.NewParent(t, "parent")
	for _, tt := range []struct{ label, stop string }{{"ok", "completed"}, {"long", "max-tokens"}} {
		run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: tt.label, Prompt: text("x"), Parent: parent})
		res, err := run.Result(ctx)
		if err != nil || res.StopReason != tt.stop {
			t.Errorf("%s: result = %+v, %v", tt.label, res, err)
		}
		if err := run.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.flushes(); n != 0 {
		t.Errorf("flushes = %d, want 0", n)
	}
}

// #139: a negative maxDepth is refused before anything is created.
func TestOneShotNegativeMaxDepthIsRefused(t *testing.T) {
	ctx := testCtx(t)
	st := subagenttest.New(t, subagenttest.Config{Model: replies(nil)})
	parent := st.NewParent(t, "parent")
	_, err := st.Runtime.Start(ctx, "spawn", subagent.OneShotRequest{Parent: parent, MaxDepth: subagent.Depth(-1)})
	if !subagent.HasCode(err, subagent.CodeInvalidRequest) || !strings.Contains(err.Error(), "non-negative safe integer") {
		t.Errorf("err = %v", err)
	}
	if len(st.Sessions.List()) != 1 {
		t.Error("a refused start created a session")
	}
}

// #128, #141: a routeless parent's child gets the request's route, or no
// route at all, and the parent's cwd. The reference's routeless child ends
// "error" because its fixture has no model for it; here the fake model
// refuses a request without a route the same way, so a child that sent
// its requests with a route (inherited from anywhere) would complete.
func TestOneShotRouteOfARoutelessParent(t *testing.T) {
	ctx := testCtx(t)
	m := &subagenttest.FuncModel{Fn: func(_ context.Context, req model.Request) ([]session.Chunk, error) {
		if req.Route == (model.Route{}) {
			return nil, errors.New("no model is configured for an empty route")
		}
		return subagenttest.Text("routed answer"), nil
	}}
	st := subagenttest.New(t, subagenttest.Config{Model: m})
	sess, err := st.Sessions.Create(session.Header{ID: "routeless", Cwd: "/workspace"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := agent.New(sess, agent.Options{Model: st.Model, Tools: st.Tools(0, false)})
	if err := st.Agents.Register(parent); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		route *model.Route
		want  model.Route
		stop  string
	}{
		{"request route", &model.Route{Provider: "mock", Model: "mock"}, model.Route{Provider: "mock", Model: "mock"}, "completed"},
		{"none", nil, model.Route{}, "error"},
	} {
		label := "x " + tt.name
		run := start(t, ctx, st, "spawn", subagent.OneShotRequest{Label: label, Prompt: text("x"), Parent: parent, Route: tt.route})
		if got := run.LocalAgent.Options().Route; got != tt.want {
			t.Errorf("%s: route = %+v, want %+v", tt.name, got, tt.want)
		}
		if h := run.LocalAgent.Session().Header(); h.Cwd != "/workspace" || h.DelegationDepth != 1 {
			t.Errorf("%s: header = %+v", tt.name, h)
		}
		res, err := run.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.StopReason != tt.stop {
			t.Errorf("%s: stop = %s, want %s", tt.name, res.StopReason, tt.stop)
		}
		if reqs := m.Requests(label); len(reqs) != 1 || reqs[0].Route != tt.want {
			t.Errorf("%s: %d model requests, want 1 with route %+v", tt.name, len(reqs), tt.want)
		}
		if err := run.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// countingDurable is a Durable that holds nothing and counts flushes.
type countingDurable struct {
	mu sync.Mutex
	n  int
}

func (d *countingDurable) List(context.Context) ([]subagent.PersistedEntry, error) { return nil, nil }
func (d *countingDurable) Inspect(context.Context, string) (session.Header, []session.Event, error) {
	return session.Header{}, nil, context.Canceled
}
func (d *countingDurable) Load(context.Context, string) (session.Header, []session.Event, error) {
	return session.Header{}, nil, context.Canceled
}
func (d *countingDurable) Release(string) error { return nil }
func (d *countingDurable) Flush(context.Context, string) error {
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
	return nil
}
func (d *countingDurable) flushes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}
