package acp_test

import (
	"slices"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestLoadDerivesChildLinksOfOldLogs: a log written before delegation
// results recorded their child link (raw output only) still replays each
// delegation with _meta["acp-agent/subagent"], its depth one below the
// loaded session's own (here a depth-1 child viewed read-only, whose own
// delegation made a depth-2 grandchild).
func TestLoadDerivesChildLinksOfOldLogs(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript))
	e.initialize(ctx)
	cwd := tempCwd(t)
	parent := e.newSession(ctx, cwd)
	child, err := e.app.Sessions.Create(session.Header{Cwd: cwd, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	result := session.ToolResultData{Turn: 1, Step: 1,
		Message: session.Message{ID: "m2", Role: session.RoleUser, Source: session.Source{Kind: session.SourceTool, CallID: "call-old"},
			Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "call-old", Content: []session.Block{session.Text("started subagent grandchild-1")}}}},
		Raw: map[string]any{"kind": "continuable", "subagentId": "grandchild-1"},
	}
	for _, ev := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, map[string]any{"turn": 1}},
		{session.TypeToolCall, session.ToolCallData{Turn: 1, Step: 1, CallID: "call-old", Name: "subagent", Arguments: `{"description":"d","prompt":"p"}`}},
		{session.TypeToolResult, result},
	} {
		if _, err := child.Append(ev.typ, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(child.ID()), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("load child: %v", err)
	}
	want := `tool_call_update call-old status=in_progress content="started subagent grandchild-1" rawOutput={"kind":"continuable","subagentId":"grandchild-1"} meta={"acp-agent/subagent":{"childSessionId":"grandchild-1","depth":2,"mode":"continuable"}}`
	if got := transcript(e.rec.snapshot(child.ID())); !slices.Contains(got, want) {
		t.Errorf("replay:\n%q\nwant a line %s", got, want)
	}
}
