package acp_test

import (
	"encoding/json"
	"slices"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

const todoScript = `
model:
  main:
    - tool_calls:
        - id: call-plan-1
          name: todo
          arguments: '{"todos":[{"content":"Read the code","status":"in_progress","priority":"high"},{"content":"Fix the bug","status":"pending"}]}'
    - tool_calls:
        - id: call-plan-bad
          name: todo
          arguments: '{"todos":[{"content":"x","status":"finished"}]}'
    - tool_calls:
        - id: call-plan-2
          name: todo
          arguments: '{"todos":[{"content":"Read the code","status":"completed","priority":"high"},{"content":"Fix the bug","status":"in_progress"}]}'
    - text: "Working on it."
`

// plans returns the plan updates among ns, each as compact JSON entries.
func plans(ns []acpsdk.SessionNotification) []string {
	var out []string
	for _, n := range ns {
		if n.Update.Plan != nil {
			b, _ := json.Marshal(n.Update.Plan.Entries)
			out = append(out, string(b))
		}
	}
	return out
}

// TestTodoStreamsPlanLiveAndOnReplay: each successful todo call is one
// plan update with the whole list (a rejected call changes nothing), and
// session/load in a fresh process replays the same plan updates from the
// log.
func TestTodoStreamsPlanLiveAndOnReplay(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	first := start(t, dir, loadScript(t, todoScript))
	first.initialize(ctx)
	id := first.newSession(ctx, cwd)
	if _, err := first.prompt(ctx, id, "fix the bug"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`[{"content":"Read the code","priority":"high","status":"in_progress"},{"content":"Fix the bug","priority":"medium","status":"pending"}]`,
		`[{"content":"Read the code","priority":"high","status":"completed"},{"content":"Fix the bug","priority":"medium","status":"in_progress"}]`,
	}
	live := plans(first.rec.snapshot(id))
	if !slices.Equal(live, want) {
		t.Errorf("live plans:\n%v\nwant:\n%v", live, want)
	}
	for _, l := range transcript(first.rec.snapshot(id)) {
		if l == `tool_call call-plan-1 kind=think status=in_progress title="Update plan (2 items, 0 completed, 1 in progress)" rawInput={"todos":[{"content":"Read the code","priority":"high","status":"in_progress"},{"content":"Fix the bug","status":"pending"}]}` {
			goto titled
		}
	}
	t.Errorf("todo call not shown as a think call with a plan title:\n%v", transcript(first.rec.snapshot(id)))
titled:
	first.stop()

	second := start(t, dir, loadScript(t, todoScript))
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if replay := plans(second.rec.snapshot(id)); !slices.Equal(replay, want) {
		t.Errorf("replayed plans:\n%v\nwant:\n%v", replay, want)
	}
}
