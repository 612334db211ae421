package acp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app"
)

// boundaryCall runs one tool call through the real connection in mode,
// with the user settings file userFile (may be ""), answering the
// permission questions with answers (then "reject-once"). It returns the
// questions asked and the call's result.
func boundaryCall(t *testing.T, cwd, userFile, mode, tool, args string, answers ...string) ([]acpsdk.RequestPermissionRequest, *acpsdk.SessionToolCallUpdate) {
	t.Helper()
	ctx := ctxFor(t)
	script := fmt.Sprintf("model:\n  main:\n    - tool_calls:\n        - {id: call-1, name: %s, arguments: '%s'}\n    - text: done\n", tool, args)
	c := newWSClient(false, false, answers...)
	e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) { cfg.SettingsFile = userFile })
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acpsdk.SessionModeId(mode)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, string(r.SessionId), "go"); err != nil {
		t.Fatal(err)
	}
	res := toolResults(e.rec.snapshot(string(r.SessionId)))["call-1"]
	if res == nil {
		t.Fatal("no result for call-1")
	}
	return c.requests(), res
}

func rawOf(u *acpsdk.SessionToolCallUpdate) string {
	raw, _ := json.Marshal(u.RawOutput)
	return string(raw)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestAllowRuleDoesNotCoverWhereASymlinkPoints: after "always allow
// edits under src/" (edit(src/**), scoped to the project), in
// accept-edits, a write through a symlink under src/ to a file outside
// the project, to .git/config, and a write to a nested
// src/x/.git/hooks/pre-commit are all asked about (and, rejected, leave
// the target as it was); a plain file under src/ is written unasked.
func TestAllowRuleDoesNotCoverWhereASymlinkPoints(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, cwd string) (path, target string)
		asks   bool
		reason string
	}{
		{"symlink to a file outside", func(t *testing.T, cwd string) (string, string) {
			secret := filepath.Join(filepath.Dir(cwd), "outside", "secret.txt")
			writeFile(t, secret, "secret\n")
			symlink(t, "../../outside/secret.txt", filepath.Join(cwd, "src", "notes.md"))
			return "src/notes.md", secret
		}, true, "outside the working directory"},
		{"symlink to .git/config", func(t *testing.T, cwd string) (string, string) {
			cfg := filepath.Join(cwd, ".git", "config")
			writeFile(t, cfg, "[core]\n")
			symlink(t, "../.git/config", filepath.Join(cwd, "src", "cfg"))
			return "src/cfg", cfg
		}, true, "Protected path: a write under .git/"},
		{"nested .git hook", func(t *testing.T, cwd string) (string, string) {
			hook := filepath.Join(cwd, "src", "x", ".git", "hooks", "pre-commit")
			writeFile(t, hook, "#!/bin/sh\n")
			return "src/x/.git/hooks/pre-commit", hook
		}, true, "Protected path: a write under .git/"},
		{"plain file under src", func(t *testing.T, cwd string) (string, string) {
			f := filepath.Join(cwd, "src", "a.txt")
			writeFile(t, f, "old\n")
			return "src/a.txt", f
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cwd := tempCwd(t)
			userFile := filepath.Join(t.TempDir(), "settings.json")
			writeFile(t, userFile, fmt.Sprintf(`{"projects": {%q: {"allow": ["edit(src/**)"]}}}`, cwd))
			path, target := tt.setup(t, cwd)
			before, _ := os.ReadFile(target)
			asked, res := boundaryCall(t, cwd, userFile, acp.ModeAcceptEdits, "write", fmt.Sprintf(`{"path":%q,"content":"core.fsmonitor = evil"}`, path))
			after, _ := os.ReadFile(target)
			if !tt.asks {
				if len(asked) != 0 || string(after) != "core.fsmonitor = evil" {
					t.Fatalf("asked %d times, target %q", len(asked), after)
				}
				return
			}
			if len(asked) != 1 {
				t.Fatalf("asked %d times, want 1 (result %s)", len(asked), rawOf(res))
			}
			q, _ := json.Marshal(asked[0])
			if !strings.Contains(string(q), tt.reason) {
				t.Errorf("the question does not say %q: %s", tt.reason, q)
			}
			if strings.Contains(string(q), "Always allow edits under") {
				t.Errorf("the question offers to save a rule for a path that still asks: %s", q)
			}
			if string(after) != string(before) || !strings.Contains(rawOf(res), workspace.CodePermissionRejected) {
				t.Errorf("rejected, yet the target holds %q (result %s)", after, rawOf(res))
			}
		})
	}
}

// TestDenyRuleHoldsThroughASymlink: a project's deny rule read(.env)
// refuses a read and a grep of a symlink to .env (RULE_DENIES, never
// asked), and a grep over the directory does not show its content.
func TestDenyRuleHoldsThroughASymlink(t *testing.T) {
	cwd := tempCwd(t)
	writeFile(t, filepath.Join(cwd, ".env"), "API_KEY=hunter2\n")
	writeFile(t, filepath.Join(cwd, ".acp-agent", "settings.json"), `{"permissions": {"deny": ["read(.env)"]}}`)
	symlink(t, ".env", filepath.Join(cwd, "notes.txt"))
	symlink(t, "..", filepath.Join(cwd, "sub", "up"))
	for _, tc := range []struct{ tool, args string }{
		{"read", `{"path":"notes.txt"}`},
		{"grep", `{"pattern":"hunter2","path":"notes.txt"}`},
		{"grep", `{"pattern":"hunter2","path":"sub/up"}`},
		{"grep", `{"pattern":"hunter2"}`},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			asked, res := boundaryCall(t, cwd, "", acp.ModeDefault, tc.tool, tc.args)
			raw := rawOf(res)
			if len(asked) != 0 || strings.Contains(raw, "hunter2") && !strings.Contains(raw, `"hunter2"`) {
				t.Fatalf("asked %d, result %s", len(asked), raw)
			}
			if strings.Contains(tc.args, "notes.txt") && !strings.Contains(raw, workspace.CodeRuleDenies) {
				t.Errorf("not refused by the rule: %s", raw)
			}
			if strings.Contains(raw, "API_KEY") {
				t.Errorf("the denied file's content shows: %s", raw)
			}
		})
	}
}

// TestExactCommandRuleIsExact: "always allow exactly this command" for
// rm -f *.o saves it with the star escaped, so a later session still asks
// before rm -f ../outside/secret.txt x.o.
func TestExactCommandRuleIsExact(t *testing.T) {
	cwd := tempCwd(t)
	userFile := filepath.Join(t.TempDir(), "acp-agent", "settings.json")
	secret := filepath.Join(filepath.Dir(cwd), "outside", "secret.txt")
	writeFile(t, secret, "secret\n")
	asked, _ := boundaryCall(t, cwd, userFile, acp.ModeDefault, "bash", `{"command":"rm -f *.o"}`, acp.OptionAllowAlways)
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	f, err := settings.ReadFile(userFile)
	if err != nil || len(f.Projects[cwd].Allow) != 1 || f.Projects[cwd].Allow[0] != `bash(rm -f \*.o)` {
		t.Fatalf("saved %+v (%v)", f.Projects, err)
	}
	asked, res := boundaryCall(t, cwd, userFile, acp.ModeDefault, "bash", `{"command":"rm -f ../outside/secret.txt x.o"}`)
	if len(asked) != 1 {
		t.Errorf("the other command was asked about %d times, want 1 (%s)", len(asked), rawOf(res))
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("the outside file is gone: %v", err)
	}
	asked, _ = boundaryCall(t, cwd, userFile, acp.ModeDefault, "bash", `{"command":"rm -f *.o"}`)
	if len(asked) != 0 {
		t.Errorf("the saved command itself asked %d times", len(asked))
	}
}

// TestUserSettingsFileInsideTheWorkspaceIsProtected: with the cwd holding
// the user's own settings file (the home directory, a dotfiles
// repository), an edit of it asks in accept-edits (and, rejected, leaves
// it alone); bypass writes it.
func TestUserSettingsFileInsideTheWorkspaceIsProtected(t *testing.T) {
	for _, mode := range []string{acp.ModeAcceptEdits, acp.ModeDefault} {
		t.Run(mode, func(t *testing.T) {
			cwd := tempCwd(t)
			userFile := filepath.Join(cwd, ".config", "acp-agent", "settings.json")
			writeFile(t, userFile, `{}`)
			asked, res := boundaryCall(t, cwd, userFile, mode, "write",
				`{"path":".config/acp-agent/settings.json","content":"{\"permissions\":{\"allow\":[\"bash\"]}}"}`, acp.OptionAllowAlways)
			if len(asked) != 1 {
				t.Fatalf("asked %d times (%s)", len(asked), rawOf(res))
			}
			q, _ := json.Marshal(asked[0])
			if !strings.Contains(string(q), "the agent's own user ") || !strings.Contains(string(q), "(this path still asks)") {
				t.Errorf("the question does not say why: %s", q)
			}
			f, err := settings.ReadFile(userFile)
			if err != nil {
				t.Fatal(err)
			}
			// Allowed once: written, and nothing saved for it.
			if len(f.Permissions.Allow) != 1 || len(f.Projects) != 0 {
				t.Errorf("after allow: %+v", f)
			}
		})
	}
}

// TestUnsandboxedCommandTitleSaysSo: with the sandbox on, the question
// for a command the model asked to run outside it says so in its title.
func TestUnsandboxedCommandTitleSaysSo(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	ctx := ctxFor(t)
	script := "model:\n  main:\n    - tool_calls:\n        - {id: call-1, name: bash, arguments: '{\"command\":\"true\",\"sandbox\":false}'}\n        - {id: call-2, name: bash, arguments: '{\"command\":\"true\"}'}\n    - text: done\n"
	c := newWSClient(false, false)
	e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) {
		cfg.Sandbox = &sandbox.Policy{TempDir: t.TempDir()}
	})
	id := e.newSession(ctx, tempCwd(t))
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, q := range c.requests() {
		titles[string(q.ToolCall.ToolCallId)] = *q.ToolCall.Title
	}
	if got := titles["call-1"]; got != "Outside the sandbox: true" {
		t.Errorf("unsandboxed title %q", got)
	}
	if got := titles["call-2"]; got != "true" {
		t.Errorf("sandboxed title %q", got)
	}
}
