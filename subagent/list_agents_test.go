package subagent_test

// Tests of the list_agents tool (subagent-contract.md §5.3). Reference
// cases #67 (plugin HMR disposal) and #68 (module export shape) are about
// the TypeScript plugin system and have no Go equivalent; the output-schema
// half of #65 has none either (tool.Tool declares no output schema), so the
// status vocabulary is pinned through the raw value instead.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

type catCaller string

func (c catCaller) SessionID() string { return string(c) }

// statusMap is a stub agent registry: id → status of a live agent.
type statusMap map[string]string

func (m statusMap) AgentStatus(id string) (string, bool) {
	s, ok := m[id]
	return s, ok
}

// stubLister returns fixed rows and records how it was called.
type stubLister struct {
	children    []subagent.ListEntry
	descendants []subagent.DescendantEntry
	calls       []string
	ctxs        []context.Context
}

func (l *stubLister) ListChildren(ctx context.Context, id string) ([]subagent.ListEntry, error) {
	l.calls, l.ctxs = append(l.calls, "children:"+id), append(l.ctxs, ctx)
	return l.children, nil
}

func (l *stubLister) ListDescendants(ctx context.Context, id string) ([]subagent.DescendantEntry, error) {
	l.calls, l.ctxs = append(l.calls, "descendants:"+id), append(l.ctxs, ctx)
	return l.descendants, nil
}

func runListAgents(t *testing.T, tl tool.Tool, ctx context.Context, args string, caller tool.Caller) tool.Result {
	t.Helper()
	res, err := tl.Execute(ctx, tool.Invocation{CallID: "call-1", Name: subagent.ListAgentsName, Arguments: json.RawMessage(args), Caller: caller})
	if err != nil {
		return tool.ErrorResult(err)
	}
	return res
}

func resultText(r tool.Result) string { return session.JoinText(r.Content, "") }

// #60, #65
func TestListAgentsSchemaAndDescription(t *testing.T) {
	spec := subagent.NewListAgents(&stubLister{}, nil).Spec()
	if spec.Name != "list_agents" {
		t.Fatalf("name %q", spec.Name)
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string   `json:"type"`
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required *[]string `json:"required"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range schema.Properties {
		keys = append(keys, k)
	}
	if schema.Type != "object" || !slices.Equal(keys, []string{"scope"}) || schema.Required != nil ||
		!slices.Equal(schema.Properties["scope"].Enum, []string{"children", "descendants"}) {
		t.Fatalf("schema %s", spec.Parameters)
	}
	for _, phrase := range []string{"send_message", "interrupt_agent", "you are told when one finishes", "resumable, not terminal"} {
		if !strings.Contains(spec.Description, phrase) {
			t.Errorf("description lacks %q", phrase)
		}
	}
}

// #61
func TestListAgentsWithoutChildrenSaysNoSubagents(t *testing.T) {
	f := newCatFix(t)
	res := runListAgents(t, subagent.NewListAgents(f.cat, statusMap{}), t.Context(), `{}`, catCaller("parent"))
	if res.IsError || resultText(res) != "(no subagents)" {
		t.Fatalf("result %+v", res)
	}
	if raw, _ := json.Marshal(res.Raw); string(raw) != "[]" {
		t.Fatalf("raw %s", raw)
	}
}

// #62: one-shot rows are dropped, diagnostics kept, status from the agent
// registry only (a running session without an agent is ready).
func TestListAgentsRendersStatusFromAgentRegistry(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("real-child-id", "parent", 1), "real child")
	real := listChildren(t, f.cat, "parent")[0]
	child := func(id, label string, mode subagent.Mode, activity subagent.Activity) subagent.ListEntry {
		return subagent.ListEntry{Kind: subagent.KindChild, ID: id, Mode: mode, Label: label, Activity: activity}
	}
	l := &stubLister{children: []subagent.ListEntry{
		child("one-shot-child", "", subagent.ModeOneShot, subagent.ActivityInactive),
		real,
		child("running-child", "still working", subagent.ModeContinuable, subagent.ActivityRunning),
		child("waiting-child", "waiting on descendants", subagent.ModeContinuable, subagent.ActivityRunning),
		child("orphan-live", "live session, no agent", subagent.ModeContinuable, subagent.ActivityRunning),
		{Kind: subagent.KindDiagnostic, ID: "broken-child", Reason: subagent.ReasonCorrupt},
	}}
	agents := statusMap{"running-child": "running", "waiting-child": "idle", "one-shot-child": "running"}
	res := runListAgents(t, subagent.NewListAgents(l, agents), t.Context(), `{}`, catCaller("parent"))
	want := "real-child-id [ready] — real child\n" +
		"running-child [running] — still working\n" +
		"waiting-child [idle] — waiting on descendants\n" +
		"orphan-live [ready] — live session, no agent\n" +
		"broken-child [diagnostic: corrupt]"
	if res.IsError || resultText(res) != want {
		t.Fatalf("text\n%s\nwant\n%s", resultText(res), want)
	}
	wantJSON(t, res.Raw, `[
		{"kind":"child","id":"real-child-id","label":"real child","status":"ready"},
		{"kind":"child","id":"running-child","label":"still working","status":"running"},
		{"kind":"child","id":"waiting-child","label":"waiting on descendants","status":"idle"},
		{"kind":"child","id":"orphan-live","label":"live session, no agent","status":"ready"},
		{"kind":"diagnostic","id":"broken-child","reason":"corrupt"}]`)
}

// #63, #71
func TestListAgentsScopeSelectsListingAndForwardsContext(t *testing.T) {
	type ctxKey struct{}
	ctx := context.WithValue(t.Context(), ctxKey{}, "tool call")
	for _, tt := range []struct{ args, want string }{
		{`{}`, "children:parent"},
		{``, "children:parent"},
		{`{"scope":"children"}`, "children:parent"},
		{`{"scope":"descendants"}`, "descendants:parent"},
	} {
		l := &stubLister{}
		res := runListAgents(t, subagent.NewListAgents(l, nil), ctx, tt.args, catCaller("parent"))
		if res.IsError || len(l.calls) != 1 || l.calls[0] != tt.want || l.ctxs[0].Value(ctxKey{}) != "tool call" {
			t.Fatalf("%s: calls %v, result %+v", tt.args, l.calls, res)
		}
	}
	res := runListAgents(t, subagent.NewListAgents(&stubLister{}, nil), ctx, `{"scope":"siblings"}`, catCaller("parent"))
	if !res.IsError || res.Error.Code != tool.CodeInvalidArgs {
		t.Fatalf("bad scope result %+v", res)
	}
}

// #64
func TestListAgentsEndToEndShowsSettledContinuableOnly(t *testing.T) {
	f := newCatFix(t)
	one, _ := f.store.Create(childHeader("one-shot-id", "parent", 1), session.CreateOptions{})
	mustAppend(one, session.TypeTurnStart, `{"turn":1}`)
	mustAppend(one, session.TypeDescriptor, oneShotPayload("finished once"))
	mustAppend(one, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	f.settle(one)
	f.settledChild(childHeader("continuable-id", "parent", 2), "summarize the doc")
	res := runListAgents(t, subagent.NewListAgents(f.cat, statusMap{}), t.Context(), `{}`, catCaller("parent"))
	if got := resultText(res); got != "continuable-id [ready] — summarize the doc" {
		t.Fatalf("text %q", got)
	}
}

// #66, and typed catalog errors keep their code in the tool result.
func TestListAgentsErrorsBecomeTypedToolResults(t *testing.T) {
	res := runListAgents(t, subagent.NewListAgents(&stubLister{}, nil), t.Context(), `{}`, nil)
	if !res.IsError || !strings.Contains(resultText(res), "requires a calling agent") || !strings.HasPrefix(resultText(res), "Error: ") {
		t.Fatalf("no-caller result %+v", res)
	}
	f := newCatFix(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res = runListAgents(t, subagent.NewListAgents(f.cat, nil), ctx, `{}`, catCaller("parent"))
	if !res.IsError || resultText(res) != "Error: subagent listing was cancelled" ||
		res.Error.Code != "CANCELLED" || res.Error.Name != "SubagentError" {
		t.Fatalf("cancelled result %+v (%+v)", res, res.Error)
	}
}

// #69: descendants over live sessions, idle child owning a running
// grandchild. The statuses come from the real runtime: a continuable child
// whose turn ended while its grandchild is still inside a model call.
func TestListAgentsDescendantsScopeAnnotatesParentAndDepth(t *testing.T) {
	ctx := testCtx(t)
	gg := newGate()
	defer gg.open()
	sc := newScript().add("nested leaf", gg.reply("leaf done"))
	ps := mustPersistence(t)
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	st := subagenttest.New(t, subagenttest.Config{Model: sc.model(), Durable: durable{ps},
		Attach: func(s *session.Store) { ps.Attach(s); reg.Attach(s) }})
	cat := &subagent.Catalog{Sessions: st.Sessions, Projections: reg, Persisted: durable{ps}}
	parent := st.NewParent(t, "parent")
	// The child starts its grandchild from inside its first turn, then
	// ends the turn: idle, and resident because it owns the grandchild.
	childIDs, grandIDs := make(chan string, 1), make(chan string, 1)
	sc.add("waiting branch", func(context.Context) ([]session.Chunk, error) {
		g, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "nested leaf", Prompt: text("deep"), Parent: st.Live(<-childIDs)})
		if err != nil {
			return nil, err
		}
		grandIDs <- g
		return subagenttest.Text("waiting"), nil
	})
	c, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "waiting branch", Prompt: text("task"), Parent: parent})
	if err != nil {
		t.Fatal(err)
	}
	childIDs <- c
	var g string
	select {
	case g = <-grandIDs:
	case <-ctx.Done():
		t.Fatal("grandchild never started")
	}
	gg.waitEntered(t, ctx)
	waitIdle(t, ctx, st.Live(c))

	res := runListAgents(t, subagent.NewListAgents(cat, st.Runtime), ctx, `{"scope":"descendants"}`, catCaller("parent"))
	want := c + " [idle] parent=parent depth=1 — waiting branch\n" + g + " [running] parent=" + c + " depth=2 — nested leaf"
	if got := resultText(res); got != want {
		t.Fatalf("text\n%s\nwant\n%s", got, want)
	}
	wantJSON(t, res.Raw, `[
		{"kind":"child","id":"`+c+`","label":"waiting branch","status":"idle","parent":"parent","depth":1},
		{"kind":"child","id":"`+g+`","label":"nested leaf","status":"running","parent":"`+c+`","depth":2}]`)
}

// #70
func TestListAgentsDescendantsRenderDropsOneShotKeepsDiagnostics(t *testing.T) {
	l := &stubLister{descendants: []subagent.DescendantEntry{
		{ListEntry: subagent.ListEntry{Kind: subagent.KindChild, ID: "one-shot-mid", Mode: subagent.ModeOneShot, Activity: subagent.ActivityInactive}, ParentID: "parent", Depth: 1},
		{ListEntry: subagent.ListEntry{Kind: subagent.KindChild, ID: "deep-leaf", Mode: subagent.ModeContinuable, Label: "deep leaf", Activity: subagent.ActivityInactive}, ParentID: "one-shot-mid", Depth: 2},
		{ListEntry: subagent.ListEntry{Kind: subagent.KindDiagnostic, ID: "broken-node", Reason: subagent.ReasonUnavailable}, ParentID: "parent", Depth: 1},
	}}
	res := runListAgents(t, subagent.NewListAgents(l, statusMap{}), t.Context(), `{"scope":"descendants"}`, catCaller("parent"))
	want := "deep-leaf [ready] parent=one-shot-mid depth=2 — deep leaf\nbroken-node [diagnostic: unavailable] parent=parent depth=1"
	if got := resultText(res); got != want {
		t.Fatalf("text\n%s\nwant\n%s", got, want)
	}
}
