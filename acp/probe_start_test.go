package acp_test

import (
	"os"
	"os/exec"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/app"
)

// TestProbeStartsWithSession: the environment probe (git status, through
// agent.Options.PrepareSystem) of a session whose system prompt is not
// recorded yet starts when the session is created or loaded, not when its
// first prompt arrives: after session/new (or session/load) returns, the
// probe is awaited before any session/prompt is sent, and the prompt that
// follows does not start another.
func TestProbeStartsWithSession(t *testing.T) {
	gitRepo := func(t *testing.T) string {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git not installed")
		}
		cwd := tempCwd(t)
		cmd := exec.Command("git", "-C", cwd, "init", "-q")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		return cwd
	}
	for _, tc := range []struct {
		name string
		cwd  func(t *testing.T) string
		load bool // create the session in an earlier process, then load it unprompted
	}{
		{"new outside git", func(t *testing.T) string { return tempCwd(t) }, false},
		{"new in a git repository", gitRepo, false},
		{"load of a session never prompted", func(t *testing.T) string { return tempCwd(t) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			dir, cwd := t.TempDir(), tc.cwd(t)
			started := make(chan string, 8)
			withProbe := func(cfg *app.Config) {
				cfg.Prompt.UserInstructions = "-"
				cfg.Testing.PrepareStarted = func(id string) { started <- id }
			}
			script := "model:\n  main:\n    - text: hello\n"
			var id string
			if tc.load {
				first := startCfg(t, dir, loadScript(t, script), nil)
				first.initialize(ctx)
				id = first.newSession(ctx, cwd)
				first.stop()
			}
			e := startCfg(t, dir, loadScript(t, script), withProbe)
			e.initialize(ctx)
			select {
			case got := <-started:
				t.Fatalf("probe of %s started before any session was created or loaded", got)
			default:
			}
			if tc.load {
				if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
					t.Fatalf("session/load: %v", err)
				}
			} else {
				id = e.newSession(ctx, cwd)
			}
			// No prompt has been sent: the probe must start on its own.
			select {
			case got := <-started:
				if got != id {
					t.Fatalf("probe started for session %s, want %s", got, id)
				}
			case <-ctx.Done():
				t.Fatalf("the probe of session %s did not start before its first prompt: %v", id, ctx.Err())
			}
			r, err := e.prompt(ctx, id, "hi")
			if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %v, %v", r, err)
			}
			// The prompt waited for the probe the session started (its
			// system prompt is recorded now); it started none of its own.
			select {
			case got := <-started:
				t.Fatalf("a second probe started (session %s) by the prompt", got)
			default:
			}
		})
	}
}
