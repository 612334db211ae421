package acp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app"
)

// TestSandboxedCommandPlantsALinkedRepository (issue 51): in accept-edits,
// a sandboxed bash call, run unasked, makes a repository with a
// core.fsmonitor in the temp dir (which it may write) and links it into
// the project through a folder symlink, where git would run the
// fsmonitor for whoever works in the link. The link is moved aside (the
// link itself: the repository behind it is left for the person to
// inspect), and the result the person and the model see names it.
func TestSandboxedCommandPlantsALinkedRepository(t *testing.T) {
	if s := sandbox.ProbeKernel(); s.ABI < 1 || !s.KeepsProtected() {
		t.Skip("this kernel lacks Landlock or an unprivileged mount namespace: the sandbox keeps no protected paths here, and accept-edits asks before sandboxed commands instead")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := ctxFor(t)
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "x")
	args := `{"command":"mkdir ` + repo + ` && git init --quiet ` + repo + ` && git -C ` + repo + ` config core.fsmonitor /tmp/payload && ln -s ` + repo + ` sub && touch made.txt"}`
	script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '" + args + "'\n    - text: done\n"
	c := newWSClient(false, true, "allow-once")
	e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) {
		cfg.Sandbox = &sandbox.Policy{TempDir: tmp}
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
	link := filepath.Join(cwd, "sub")
	if _, err := os.Lstat(link); err == nil {
		t.Error("the link to the planted repository is still there")
	}
	if to, err := os.Readlink(link + sandbox.QuarantineSuffix); err != nil || to != repo {
		t.Errorf("the moved-aside entry is not the link to %s: %q, %v", repo, to, err)
	}
	if want := strconv.Quote(link) + " to " + strconv.Quote(link+sandbox.QuarantineSuffix); !strings.Contains(text.String(), want) {
		t.Errorf("the result does not say %q:\n%s", want, text.String())
	}
	if !strings.Contains(text.String(), "a folder symlink to a git repository outside the working directory") {
		t.Errorf("the result does not say why a symlink was moved:\n%s", text.String())
	}
	if !strings.Contains(string(raw), `"to":"`+link+sandbox.QuarantineSuffix+`"`) {
		t.Errorf("the raw output does not list the link: %s", raw)
	}
	if cfg, err := os.ReadFile(filepath.Join(repo, ".git", "config")); err != nil || !strings.Contains(string(cfg), "fsmonitor") {
		t.Errorf("the repository behind the link changed: %q, %v", cfg, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
		t.Errorf("the command's ordinary file is gone: %v", err)
	}
}
