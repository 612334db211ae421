package acp_test

import (
	"context"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/internal/acpschema"
)

const idleUsageScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: STARTED
    - text: NOTED
  Back:
    - text: BACK_DONE
      usage: {input: 12, output: 5}
`

// idleUsages lists the usage of each idle snapshot of child id.
func idleUsages(fs []frame, id string) []map[string]any {
	var out []map[string]any
	for _, f := range fs {
		if f.kind != acp.UpdateSubagent || f.update["sessionId"] != id {
			continue
		}
		st, _ := f.update["state"].(map[string]any)
		if st["state"] != acp.StateIdle {
			continue
		}
		u, _ := st["usage"].(map[string]any)
		out = append(out, u)
	}
	return out
}

// TestSubagentSessions_IdleUsage: a child's idle snapshots carry what it
// spent on its own, live (at its settlement) and when its parent is
// loaded again after a restart (from the catalog), as the schema shapes
// it.
func TestSubagentSessions_IdleUsage(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	gate := &gateModel{Model: loadScript(t, idleUsageScript), key: "Back", release: make(chan struct{})}
	e := startSubagents(t, dir, gate, newWSClient(false, false), clientV1)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	back := findChild(t, e.env, id)
	close(gate.release)
	awaitSettled(ctx, t, e.env, back)
	awaitNoted(ctx, t, e.env, id)
	want := map[string]any{"inputTokens": float64(12), "outputTokens": float64(5), "totalTokens": float64(17)}
	check := func(fs []frame, when string) {
		t.Helper()
		us := idleUsages(fs, back)
		if len(us) == 0 {
			t.Fatalf("%s: no idle snapshot of the child", when)
		}
		last := us[len(us)-1]
		for k, v := range want {
			if last[k] != v {
				t.Errorf("%s: usage %v, want %v", when, last, want)
				break
			}
		}
		for _, f := range fs {
			acpschema.CheckMessage(t, []byte(f.line))
		}
	}
	awaitFrames(ctx, t, e, func(fs []frame) bool { return len(idleUsages(fs, back)) > 0 },
		func(fs []frame) string { return "no idle snapshot" })
	check(frames(e.tap.lines()), "live")
	e.stop()

	e2 := startSubagents(t, dir, loadScript(t, idleUsageScript), newWSClient(false, false), clientV1)
	if _, err := e2.cs.LoadSession(context.Background(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	check(frames(e2.tap.lines()), "after a restart")
}

const coldScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: STARTED
    - text: NOTED
    - tool_calls:
        - id: call-more
          name: send_message
          arguments: '{"subagent_id": "CHILD", "message": "More."}'
    - text: SENT
    - text: NOTED_AGAIN
  Back:
    - text: BACK_DONE
    - text: MORE_DONE
`

// TestSubagentSessions_ColdResume: after a restart, loading the parent
// announces its settled child again as idle (its true state), and a
// message to it resumes it cold: the client sees it running, the message
// from the parent on its stream, and idle again once it settles; every
// frame as the schema shapes it.
func TestSubagentSessions_ColdResume(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	gate := &gateModel{Model: loadScript(t, coldScript), key: "Back", release: make(chan struct{})}
	e := startSubagents(t, dir, gate, newWSClient(false, false), clientV1)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	back := findChild(t, e.env, id)
	close(gate.release)
	awaitSettled(ctx, t, e.env, back)
	awaitNoted(ctx, t, e.env, id)
	e.stop()

	ids := &argsModel{Model: loadScript(t, coldScript)}
	ids.set(back)
	e2 := startSubagents(t, dir, ids, newWSClient(false, false), clientV1)
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := states(frames(e2.tap.lines()), back); len(got) != 1 || got[0] != "idle end_turn" {
		t.Fatalf("after a restart, the child announced as %v, want [idle end_turn]", got)
	}
	if _, err := e2.prompt(ctx, id, "message it again"); err != nil {
		t.Fatal(err)
	}
	awaitSettled(ctx, t, e2.env, back)
	want := []string{"idle end_turn", "running", "idle end_turn"}
	awaitFrames(ctx, t, e2, func(fs []frame) bool { return slicesEqual(states(fs, back), want) },
		func(fs []frame) string { return "states " + strings.Join(states(fs, back), ", ") })
	fs := frames(e2.tap.lines())
	checkAnnouncedFirst(t, fs, map[string]bool{back: true})
	if got := messages(fs, back); len(got) != 1 || got[0] != id+"->"+back+": More." {
		t.Errorf("messages on the child = %q, want the parent's More.", got)
	}
	for _, f := range fs {
		acpschema.CheckMessage(t, []byte(f.line))
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
