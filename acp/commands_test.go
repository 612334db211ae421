package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestAvailableCommandsAfterNewAndLoad: the command list follows the
// session/new response, and precedes the session/load response.
func TestAvailableCommandsAfterNewAndLoad(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, "model: {main: [{text: hi}]}"))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	n := awaitCommands(t, ctx, e, id)
	b, _ := json.Marshal(n.Update.AvailableCommandsUpdate.AvailableCommands)
	if got, want := string(b), `[{"description":"show the subagent tree of this session (from the durable catalog, without asking the model)","name":"agents"},{"description":"summarize the conversation so far to free context (the full history stays in the log)","input":{"hint":"optional instructions for the summary"},"name":"compact"},{"description":"list the skills of this session's directory (name, description, folder) and the files that were skipped","name":"skills"}]`; got != want {
		t.Errorf("commands = %s, want %s", got, want)
	}
	if _, err := e.prompt(ctx, id, "hello"); err != nil {
		t.Fatal(err)
	}
	e.rec.reset()
	if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	// The SDK's barrier: everything sent before the load response is here.
	got := e.rec.snapshot(id)
	if len(got) == 0 || got[len(got)-1].Update.AvailableCommandsUpdate == nil {
		t.Errorf("load: last update is not available_commands_update: %v", transcript(got))
	}
}

// TestSlashCommands: /agents and an unknown command are answered without
// a model turn (the script has no reply, and no model at all is needed),
// and are not recorded in the session log.
func TestSlashCommands(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil) // no model configured
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	awaitCommands(t, ctx, e, id)
	tests := []struct {
		prompt string
		want   []string
	}{
		{"/agents", []string{"Subagents of this session (0):", "```text\n" + id + "\n  (no subagents)\n```"}},
		{"  /agents extra words", []string{`unknown argument "extra words": use /agents to list the subagents, /agents merge [--squash] ID or /agents discard ID`}},
		{"/nope", []string{"Unknown command `/nope`. Available commands:", "- `/agents` — show the subagent tree"}},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			e.rec.reset()
			resp, err := e.prompt(ctx, id, tt.prompt)
			if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt %q: %v %v", tt.prompt, resp, err)
			}
			got := strings.Join(transcript(e.rec.snapshot(id)), "\n")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer to %q lacks %q:\n%s", tt.prompt, w, got)
				}
			}
		})
	}
	sess, ok := e.app.Sessions.Get(id)
	if !ok {
		t.Fatal("session not live")
	}
	if n := len(sess.MustEvents()); n != 0 {
		t.Errorf("slash commands appended %d events to the log, want 0", n)
	}
	// A prompt starting with a path is not a command: it reaches the
	// (missing) model.
	if _, err := e.prompt(ctx, id, "/home/me/file.go explain this"); err == nil {
		t.Error("a path prompt was treated as a command")
	}
}
