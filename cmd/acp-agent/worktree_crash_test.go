package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The binary is SIGKILLed while a child isolated in a worktree runs a
// command. The worktree stays; the next process's catalog (acp-agent
// agents) lists it with its branch; a follow-up cold-resumes the child in
// it, and when the child settles untouched its worktree and branch are
// removed.
func TestKilledWorktreeChildIsListedAndCleanedUp(t *testing.T) {
	dir := t.TempDir()
	data, cwd := filepath.Join(dir, "data"), filepath.Join(dir, "repo")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cwd, _ = filepath.EvalSymlinks(cwd)
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, cwd, "init", "--quiet")
	gitIn(t, cwd, "add", "a.txt")
	gitIn(t, cwd, "commit", "--quiet", "-m", "first")
	pidFile := filepath.Join(dir, "pid")
	script := fmt.Sprintf(`model:
  main:
    - tool_calls: [{id: call_start, name: subagent, arguments: '{"description": "Iso", "prompt": "work", "isolation": "worktree"}'}]
    - text: STARTED
  Iso:
    - tool_calls: [{id: call_sleep, name: bash, arguments: '{"command": "echo $$ > %s; sleep 30"}'}]
    - text: DONE
`, pidFile)
	p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, script))
	p.answerPermissions("allow-once")
	parent := p.newSession(t, cwd)
	var res map[string]any
	p.call(t, "session/prompt", map[string]any{"sessionId": parent, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)
	awaitPIDFile(t, pidFile)
	entries, err := os.ReadDir(filepath.Join(cwd, ".acp-agent", "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	var child string
	for _, e := range entries {
		if e.IsDir() {
			child = e.Name()
		}
	}
	if child == "" {
		t.Fatal("no worktree while the child runs")
	}
	worktree := filepath.Join(cwd, ".acp-agent", "worktrees", child)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()

	// The next load lists it: the catalog from disk, git for its state.
	code, out := cliRun(t, data, "agents", parent)
	if code != 0 || !strings.Contains(out, child+" [continuable") ||
		!strings.Contains(out, "worktree "+worktree+" on branch acp-agent/"+child+", no changes") {
		t.Fatalf("agents after the kill:\n%s", out)
	}
	if _, err := os.Stat(worktree); err != nil {
		t.Fatalf("the worktree did not survive the kill: %v", err)
	}

	// A later settlement cleans it up.
	script2 := fmt.Sprintf(`model:
  main:
    - text: UNUSED
    - text: UNUSED
    - tool_calls: [{id: call_again, name: send_message, arguments: '{"subagent_id": %q, "message": "finish"}'}]
    - text: SENT
    - text: NOTED
  Iso:
    - text: DONE
    - text: DONE
`, child)
	p2 := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), script2))
	p2.answerPermissions("allow-once")
	var init, loaded map[string]any
	p2.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	p2.call(t, "session/load", map[string]any{"sessionId": parent, "cwd": cwd, "mcpServers": []any{}}, &loaded)
	p2.call(t, "session/prompt", map[string]any{"sessionId": parent, "prompt": []any{map[string]any{"type": "text", "text": "finish it"}}}, &res)
	p2.awaitUpdate(t, func(u update) bool {
		if os.Getenv("DEBUG_WT") != "" {
			t.Logf("%s %s %s", u.Kind, u.ToolCallID, u.Text())
		}
		return u.Kind == "agent_message_chunk" && u.Text() == "NOTED"
	})
	if _, err := os.Stat(worktree); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after the child settled: %v", err)
	}
	if b := gitIn(t, cwd, "branch", "--list", "acp-agent/*"); b != "" {
		t.Errorf("branch left: %q", b)
	}
	if s := gitIn(t, cwd, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("the repository is not clean:\n%s", s)
	}
	p2.stdin.Close()
	p2.waitExit(t, exitBound)
	if _, out := cliRun(t, data, "agents", parent); !strings.Contains(out, "worktree removed with its branch acp-agent/"+child) {
		t.Errorf("agents after the cleanup:\n%s", out)
	}
}

// A limit that is not a positive number is a usage error, named with its
// environment variable.
func TestMaxBackgroundUsageError(t *testing.T) {
	code, out := cliRun(t, t.TempDir(), "--max-background", "-2")
	if code != 2 || !strings.Contains(out, "--max-background (env ACP_AGENT_MAX_BACKGROUND) must be a positive number of subagents") {
		t.Fatalf("got:\n%s", out)
	}
}
