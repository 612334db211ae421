package acp_test

// This file tests an agent definition's permission mode over the real
// ACP connection: the child decides in the mode its descriptor records,
// so under an accept-edits root a plan child is refused its write and a
// default child is asked, while the root writes without a question.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

const childModeScript = `
model:
  main:
    - tool_calls:
        - id: call-p
          name: write
          arguments: '{"path": "p.txt", "content": "from the root\n"}'
    - tool_calls:
        - id: call-plan
          name: subagent
          arguments: '{"description": "Planner", "prompt": "Write c.txt.", "agent": "planner"}'
    - tool_calls:
        - id: call-ask
          name: subagent
          arguments: '{"description": "Asker", "prompt": "Write d.txt.", "agent": "asker"}'
    - text: STARTED
    - text: NOTED
    - text: NOTED AGAIN
  Planner:
    - tool_calls:
        - id: call-c
          name: write
          arguments: '{"path": "c.txt", "content": "from the planner\n"}'
    - text: REFUSED
  Asker:
    - tool_calls:
        - id: call-d
          name: write
          arguments: '{"path": "d.txt", "content": "from the asker\n"}'
    - text: WRITTEN
`

func TestChildDecidesInItsDefinitionsMode(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, childModeScript), c)
	cwd := tempCwd(t)
	agents := filepath.Join(cwd, ".acp-agent", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"planner.md": "---\ndescription: Plans only\nmode: foreground\npermissionMode: plan\n---\n",
		"asker.md":   "---\ndescription: Asks first\npermissionMode: default\n---\n",
	} {
		if err := os.WriteFile(filepath.Join(agents, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "accept-edits"}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	select {
	case <-c.askedCh:
	case <-ctx.Done():
		t.Fatal("the default-mode child was never asked")
	}
	var asker string
	entries, err := e.app.Catalog.ListChildren(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var planner string
	for _, en := range entries {
		switch en.Label {
		case "Asker":
			asker = en.ID
		case "Planner":
			planner = en.ID
		}
	}
	if asker == "" || planner == "" {
		t.Fatalf("children = %+v", entries)
	}
	awaitSettled(ctx, t, e.env, asker)
	if b, err := os.ReadFile(filepath.Join(cwd, "p.txt")); err != nil || string(b) != "from the root\n" {
		t.Errorf("the root's write: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "c.txt")); err == nil {
		t.Error("the plan child wrote c.txt")
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "d.txt")); err != nil || string(b) != "from the asker\n" {
		t.Errorf("the asked child's write: %q, %v", b, err)
	}
	reqs := c.requests()
	if len(reqs) != 1 || string(reqs[0].ToolCall.ToolCallId) != asker+"/call-d" {
		var ids []string
		for _, r := range reqs {
			ids = append(ids, string(r.ToolCall.ToolCallId))
		}
		t.Errorf("permission requests = %v, want only %s/call-d", ids, asker)
	}
	// The plan child's refusal says why, to its model.
	snap, err := e.app.Persist.Inspect(ctx, planner)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range snap.Events {
		if ev.Type != session.TypeToolResult {
			continue
		}
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err == nil && d.Error != nil && d.Error.Code == workspace.CodeModeForbids &&
			strings.Contains(d.Error.Message, "this subagent runs in plan mode (its agent definition asks for it)") {
			found = true
		}
	}
	if !found {
		t.Error("the plan child's write was not refused with MODE_FORBIDS naming its definition")
	}
}
