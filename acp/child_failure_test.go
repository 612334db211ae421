package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestForegroundChildFailureSaysWhy: when a foreground child's model
// fails, the result the parent's model gets (its logged tool result) and
// the editor's tool call both carry the cause, not only "subagent run
// failed"; the prompt still ends end_turn.
func TestForegroundChildFailureSaysWhy(t *testing.T) {
	const cause = "server error (HTTP 500) after 4 attempts: upstream unavailable"
	const want = "subagent run failed: " + cause
	ctx := t.Context()
	dir := t.TempDir()
	e := start(t, dir, loadScript(t, `
model:
  main:
    - tool_calls:
        - id: call_fg
          name: subagent
          arguments: '{"description": "Helper", "prompt": "Help.", "run_in_background": false}'
    - text: "NOTED"
  Helper:
    - error: "`+cause+`"
`))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	r, err := e.prompt(ctx, id, "delegate")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	// The editor's tool call: its failed update shows the cause.
	shown := false
	for _, n := range e.rec.snapshot(id) {
		u := n.Update.ToolCallUpdate
		if u == nil || u.ToolCallId != "call_fg" || u.Status == nil || *u.Status != acpsdk.ToolCallStatusFailed {
			continue
		}
		for _, c := range u.Content {
			if c.Content != nil && c.Content.Content.Text != nil && strings.Contains(c.Content.Content.Text.Text, want) {
				shown = true
			}
		}
	}
	if !shown {
		t.Errorf("no failed tool_call_update of call_fg shows %q:\n%s", want, strings.Join(transcript(e.rec.snapshot(id)), "\n"))
	}
	// The parent's result, as logged (what its model was given).
	log, err := os.ReadFile(filepath.Join(dir, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, `"type":"tool/result"`) {
			if !strings.Contains(line, want) {
				t.Errorf("parent's tool result lacks the cause:\n%s", line)
			}
			return
		}
	}
	t.Errorf("no tool/result in the parent's log")
}
