package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	t.Log(keepsNote())
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
		{"sandboxed in accept-edits", true, "accept-edits", `{"command":"touch made.txt"}`, keepsAsks(), 0},
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

// TestProjectSandboxSettings: a project's settings file that turns the
// sandbox on sandboxes the commands of sessions in that project (locally,
// without asking in accept-edits, a write outside refused), not those of
// other projects; a project file that tries to turn the sandbox off or to
// make a path outside it writable is reported and left out.
func TestProjectSandboxSettings(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	tests := []struct {
		name, user, project string
		sandboxed           bool
		reports             []string
	}{
		{"project turns it on", "", `{"sandbox": {"enabled": true}}`, true, nil},
		{"no project settings", "", "", false, nil},
		{"project cannot loosen", `{"sandbox": {"enabled": true}}`, `{"sandbox": {"enabled": false, "writablePaths": ["OUTSIDE"]}}`, true,
			[]string{"sandbox.enabled: a project file can turn the sandbox on, not off", "is outside the project"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			base := t.TempDir()
			cwd, tmp, outside := filepath.Join(base, "project"), filepath.Join(base, "tmp"), filepath.Join(base, "outside")
			for _, d := range []string{cwd, tmp, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// The sandbox's temp dir must not cover the outside dir.
			t.Setenv("TMPDIR", tmp)
			if tt.project != "" {
				writeFile(t, filepath.Join(cwd, ".acp-agent", "settings.json"), strings.ReplaceAll(tt.project, "OUTSIDE", outside))
			}
			user := ""
			if tt.user != "" {
				user = filepath.Join(base, "user.json")
				writeFile(t, user, tt.user)
			}
			args := `{"command":"touch made.txt; touch ` + outside + `/escaped.txt; true"}`
			script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '" + args + "'\n    - text: done\n"
			c := newWSClient(false, true, "allow-once")
			e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) { cfg.SettingsFile = user })
			r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			id := string(r.SessionId)
			if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acpsdk.SessionModeId("accept-edits")}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.prompt(ctx, id, "go"); err != nil {
				t.Fatal(err)
			}
			res := toolResults(e.rec.snapshot(id))["call-1"]
			if res == nil || *res.Status != acpsdk.ToolCallStatusCompleted {
				t.Fatalf("call-1 = %+v", res)
			}
			if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
				t.Errorf("the command did not run in the cwd: %v", err)
			}
			raw, _ := json.Marshal(res.RawOutput)
			_, err = os.Stat(filepath.Join(outside, "escaped.txt"))
			escaped := err == nil
			c.mu.Lock()
			terms := c.termN
			c.mu.Unlock()
			asks := len(c.requests())
			if tt.sandboxed {
				if escaped || !strings.Contains(string(raw), "sandboxed: writes only under") || asks != keepsAsks() || terms != 0 {
					t.Errorf("not sandboxed: escaped %v, %d asks, %d client terminals, result %s", escaped, asks, terms, raw)
				}
			} else if !escaped || strings.Contains(string(raw), "sandboxed") || asks != 1 || terms != 1 {
				t.Errorf("sandboxed without settings: escaped %v, %d asks, %d client terminals, result %s", escaped, asks, terms, raw)
			}
			notices := strings.Join(transcript(e.rec.snapshot(id)), "\n")
			if n := strings.Count(notices, "Project setting not applied"); n != len(tt.reports) {
				t.Errorf("%d reports, want %d:\n%s", n, len(tt.reports), notices)
			}
			for _, want := range tt.reports {
				if !strings.Contains(notices, want) {
					t.Errorf("no report saying %q:\n%s", want, notices)
				}
			}
		})
	}
}

// keepsAsks is how often accept-edits asks before a sandboxed command:
// never where the sandbox keeps .git and the other protected paths
// read-only, once where it cannot (a sandboxed command could plant a git
// hook that runs unsandboxed later).
func keepsAsks() int {
	if sandbox.ProbeKernel().KeepsProtected() {
		return 0
	}
	return 1
}

func keepsNote() string {
	if sandbox.ProbeKernel().KeepsProtected() {
		return "this kernel lets the sandbox keep protected paths read-only: accept-edits runs sandboxed commands unasked"
	}
	return "this kernel does not let the sandbox keep protected paths read-only: accept-edits asks before sandboxed commands"
}

// TestSandboxedCommandCreatesProtectedPaths: in accept-edits, a
// sandboxed command runs unasked; one that creates a repository and an
// editor's task file in a project that had neither (where the
// read-only binds cannot reach) finds both moved aside (as they appear,
// or when it is over), and the result the person and the model see
// names each path and where it went; the rest of what it wrote stays.
func TestSandboxedCommandCreatesProtectedPaths(t *testing.T) {
	if s := sandbox.ProbeKernel(); s.ABI < 1 || !s.KeepsProtected() {
		t.Skip("this kernel lacks Landlock or an unprivileged mount namespace: the sandbox keeps no protected paths here, and accept-edits asks before sandboxed commands instead")
	}
	ctx := ctxFor(t)
	// ";", not "&&": the agent may move .git aside while git init runs.
	args := `{"command":"git init --quiet; git config core.fsmonitor /tmp/payload; mkdir .vscode; echo {} > .vscode/tasks.json; touch made.txt"}`
	script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '" + args + "'\n    - text: done\n"
	c := newWSClient(false, true, "allow-once")
	e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) {
		cfg.Sandbox = &sandbox.Policy{TempDir: t.TempDir()}
	})
	cwd := tempCwd(t)
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(r.SessionId)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: "accept-edits"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	if n := len(c.requests()); n != 0 {
		t.Errorf("asked %d times, want none", n)
	}
	u := toolResults(e.rec.snapshot(id))["call-1"]
	if u == nil || *u.Status != acpsdk.ToolCallStatusCompleted {
		t.Fatalf("call-1 = %+v", u)
	}
	var text strings.Builder
	for _, cc := range u.Content {
		if cc.Content != nil && cc.Content.Content.Text != nil {
			text.WriteString(cc.Content.Content.Text.Text)
		}
	}
	raw, _ := json.Marshal(u.RawOutput)
	for _, name := range []string{".git", ".vscode"} {
		p := filepath.Join(cwd, name)
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there", name)
		}
		if _, err := os.Stat(p + sandbox.QuarantineSuffix); err != nil {
			t.Errorf("%s was not moved aside: %v", name, err)
		}
		if want := strconv.Quote(p) + " to " + strconv.Quote(p+sandbox.QuarantineSuffix); !strings.Contains(text.String(), want) {
			t.Errorf("the result does not say %q:\n%s", want, text.String())
		}
		if !strings.Contains(string(raw), `"to":"`+p+sandbox.QuarantineSuffix+`"`) {
			t.Errorf("the raw output does not list %s: %s", name, raw)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
		t.Errorf("the command's ordinary file is gone: %v", err)
	}
}
