package acp_test

import (
	"os"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app"
)

// TestSandboxedCommands: with the sandbox on, a sandboxed command runs
// without asking in accept-edits mode (and asks in default mode), locally
// even when the client offers terminals; a command the model asks to run
// outside the sandbox asks and then runs in the editor's terminal. With
// the sandbox off, accept-edits asks before commands.
func TestSandboxedCommands(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	tests := []struct {
		name      string
		sandbox   bool
		mode      string
		args      string
		asks      int
		terminals int
	}{
		{"sandboxed in accept-edits", true, "accept-edits", `{"command":"touch made.txt"}`, 0, 0},
		{"sandboxed in default", true, "default", `{"command":"touch made.txt"}`, 1, 0},
		{"outside the sandbox in accept-edits", true, "accept-edits", `{"command":"touch made.txt","sandbox":false}`, 1, 1},
		{"no sandbox in accept-edits", false, "accept-edits", `{"command":"touch made.txt"}`, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '" + tt.args + "'\n    - text: done\n"
			c := newWSClient(false, true, "allow-once")
			e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) {
				if tt.sandbox {
					cfg.Sandbox = &sandbox.Policy{TempDir: t.TempDir()}
				}
			})
			cwd := tempCwd(t)
			r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acpsdk.SessionModeId(tt.mode)}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.prompt(ctx, string(r.SessionId), "go"); err != nil {
				t.Fatal(err)
			}
			if n := len(c.requests()); n != tt.asks {
				t.Errorf("asked %d times, want %d", n, tt.asks)
			}
			c.mu.Lock()
			terms := c.termN
			c.mu.Unlock()
			if terms != tt.terminals {
				t.Errorf("%d client terminals, want %d", terms, tt.terminals)
			}
			res := toolResults(e.rec.snapshot(string(r.SessionId)))["call-1"]
			if res == nil || *res.Status != acpsdk.ToolCallStatusCompleted {
				t.Fatalf("call-1 = %+v", res)
			}
			if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
				t.Errorf("the command did not run in the cwd: %v", err)
			}
		})
	}
}
