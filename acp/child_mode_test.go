package acp_test

// This file tests an agent definition's permission mode over the real
// ACP connection: the child decides in the mode its descriptor records,
// so under an accept-edits root a plan child is refused its write and a
// default child is asked, while the root writes without a question.

import (
	"fmt"
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
    - text: AGAIN
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
	// The background child asks during the prompt, or its question is
	// held for the next one.
	promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
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

const childModeResumeScript = `
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Reviewer", "prompt": "Write c.txt.", "agent": "reviewer"}'
    - text: STARTED
    - text: NOTED
    - text: NOTED AGAIN
    - text: NOTED ONCE MORE
  Reviewer:
    - tool_calls:
        - id: call-c1
          name: write
          arguments: '{"path": "c.txt", "content": "from the reviewer\n"}'
    - text: REFUSED
    - tool_calls:
        - id: call-c2
          name: write
          arguments: '{"path": "c.txt", "content": "from the reviewer\n"}'
    - text: REFUSED AGAIN
`

// TestChildModeHoldsAfterRestart: a background child in plan mode (its
// definition's) under an accept-edits root is refused its write; after a
// restart, with its definition file deleted, the cold-resumed child is
// refused again, from the mode its descriptor recorded.
func TestChildModeHoldsAfterRestart(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	cwd := tempCwd(t)
	def := filepath.Join(cwd, ".acp-agent", "agents", "reviewer.md")
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("---\ndescription: Reviews\npermissionMode: plan\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newWSClient(false, false)
	e := startWS(t, loadScript(t, childModeResumeScript), c, inDir(dir))
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "accept-edits"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	childID := findChild(t, e.env, id)
	awaitSettled(ctx, t, e.env, childID)
	e.stop()
	if err := os.Remove(def); err != nil {
		t.Fatal(err)
	}

	c2 := newWSClient(false, false)
	e2 := startWS(t, loadScript(t, childModeResumeScript), c2, inDir(dir))
	loadWS(t, e2, id, cwd)
	parent, ok := e2.app.Agents.Get(id)
	if !ok {
		t.Fatal("root agent not registered after the load")
	}
	if _, err := e2.app.Subagents.Followup(ctx, parent, childID, []session.Block{session.Text("Try again.")}); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	var results []session.Event
	poll(ctx, t, "the resumed child settles after its second write", func() bool {
		if e2.app.Subagents.Resident(childID) {
			return false
		}
		snap, err := e2.app.Persist.Inspect(ctx, childID)
		if err != nil {
			return false
		}
		results = loggedToolResults(snap.Events)
		return len(results) == 2
	})
	if n := countForbidden(results); n != 2 {
		t.Errorf("%d of the child's 2 writes refused by plan mode, want both", n)
	}
	if _, err := os.Stat(filepath.Join(cwd, "c.txt")); err == nil {
		t.Error("the plan child wrote c.txt")
	}
	if n := len(c.requests()) + len(c2.requests()); n != 0 {
		t.Errorf("%d permission requests, want none (plan refuses)", n)
	}
}

// loggedToolResults returns the tool results of events.
func loggedToolResults(events []session.Event) []session.Event {
	var out []session.Event
	for _, ev := range events {
		if ev.Type == session.TypeToolResult {
			out = append(out, ev)
		}
	}
	return out
}

// countForbidden counts the tool results refused by the child's plan mode.
func countForbidden(events []session.Event) int {
	n := 0
	for _, ev := range events {
		if ev.Type != session.TypeToolResult {
			continue
		}
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err == nil && d.Error != nil && d.Error.Code == workspace.CodeModeForbids {
			n++
		}
	}
	return n
}

// A project definition asking for a broader mode than the session's (or
// any mode but plan under a plan root) runs in the session's mode: the
// delegation result the parent's model reads, and the prompt the child's
// model reads, both say so, with the raw output's permissionMode
// {asked, runs}. A mode no broader than the root's applies as asked and
// nothing is said.
func TestCappedChildModeIsSaid(t *testing.T) {
	tests := []struct {
		name       string
		rootMode   string
		def        string // permissionMode of the project definition
		background bool
		wantRuns   string // "" when not capped
		why        string
	}{
		{"project widens default, foreground", "default", "accept-edits", false, "default", "a definition from the project may not widen the session's mode (default)"},
		{"project widens default, background", "default", "accept-edits", true, "default", "a definition from the project may not widen the session's mode (default)"},
		{"plan root keeps the child in plan", "plan", "default", false, "plan", "the session is in plan mode, which keeps every subagent read-only"},
		{"narrower applies as asked", "accept-edits", "plan", false, "", ""},
		{"equal applies as asked", "default", "default", true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			script := fmt.Sprintf(`
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Kid", "prompt": "Do it.", "agent": "kid", "run_in_background": %v}'
    - text: DONE
    - text: NOTED
  Kid:
    - text: KID DONE
`, tt.background)
			c := newWSClient(false, false, "allow-once")
			e := startWS(t, loadScript(t, script), c)
			cwd := tempCwd(t)
			def := filepath.Join(cwd, ".acp-agent", "agents", "kid.md")
			if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(def, []byte("---\ndescription: A kid\npermissionMode: "+tt.def+"\n---\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			id := e.newSession(ctx, cwd)
			if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: acpsdk.SessionModeId(tt.rootMode)}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			child := findChild(t, e.env, id)
			awaitSettled(ctx, t, e.env, child)

			sess, ok := e.app.Sessions.Get(id)
			if !ok {
				t.Fatal("root session not live")
			}
			events, err := sess.Events()
			if err != nil {
				t.Fatal(err)
			}
			var result *session.ToolResultData
			for _, ev := range events {
				if ev.Type == session.TypeToolResult {
					d, err := session.DecodeData[session.ToolResultData](ev)
					if err != nil {
						t.Fatal(err)
					}
					result = &d
					break
				}
			}
			if result == nil {
				t.Fatal("no delegation result in the root's log")
			}
			var parentSays string
			for _, b := range result.Message.Content {
				parentSays += session.JoinText(b.Content, "\n")
			}
			snap, err := e.app.Persist.Inspect(ctx, child)
			if err != nil {
				t.Fatal(err)
			}
			var childReads string
			for _, ev := range snap.Events {
				if ev.Type == session.TypeUserMessage {
					if m, err := session.DecodeData[session.Message](ev); err == nil {
						childReads += session.JoinText(m.Content, "\n")
					}
				}
			}
			raw, _ := result.Raw.(map[string]any)
			if tt.wantRuns == "" {
				if strings.Contains(parentSays, "Note:") || strings.Contains(childReads, "Note:") || raw["permissionMode"] != nil {
					t.Fatalf("an uncapped mode was reported:\nparent: %s\nchild: %s\nraw: %v", parentSays, childReads, raw)
				}
				return
			}
			wantParent := fmt.Sprintf(`Note: subagent "Kid" (agent kid) runs in %s mode, although its agent definition asks for %s: %s.`, tt.wantRuns, tt.def, tt.why)
			if !strings.Contains(parentSays, wantParent) {
				t.Errorf("the delegation result does not say the mode is capped:\n%s\nwant %s", parentSays, wantParent)
			}
			wantChild := fmt.Sprintf("Note: you run in %s mode, although your agent definition (kid) asks for %s: %s.", tt.wantRuns, tt.def, tt.why)
			if !strings.Contains(childReads, wantChild) || !strings.Contains(childReads, "Do it.") {
				t.Errorf("the child's prompt does not say its mode is capped:\n%s", childReads)
			}
			pm, _ := raw["permissionMode"].(map[string]any)
			if pm["asked"] != tt.def || pm["runs"] != tt.wantRuns {
				t.Errorf("raw permissionMode = %v", raw["permissionMode"])
			}
		})
	}
}
