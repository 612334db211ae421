package acp_test

// This file tests the workspace boundary of a child isolated in a git
// worktree: the worktree is its cwd, so the parent's tree is outside it
// and writing there asks, even in bypass mode.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

// gitInit makes dir a repository with one commit (pinned identity and
// dates, no user configuration).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("repo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--quiet"}, {"add", "README"}, {"commit", "--quiet", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// TestWorktreeChildAskedBeforeWritingParentTree: in bypass mode, a child
// isolated in a worktree writes inside its worktree without a question,
// and is asked before writing into the parent's tree.
func TestWorktreeChildAskedBeforeWritingParentTree(t *testing.T) {
	ctx := ctxFor(t)
	cwd, err := filepath.EvalSymlinks(tempCwd(t))
	if err != nil {
		t.Fatal(err)
	}
	gitInit(t, cwd)
	parentFile := filepath.Join(cwd, "parent.txt")
	script := fmt.Sprintf(`
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Isolated", "prompt": "Write two files.", "isolation": "worktree"}'
    - text: STARTED
    - text: NOTED
    - text: AGAIN
  Isolated:
    - tool_calls:
        - id: call-inside
          name: write
          arguments: '{"path": "inside.txt", "content": "in the worktree\n"}'
        - id: call-parent
          name: write
          arguments: '{"path": %q, "content": "in the parent tree\n"}'
    - text: WRITTEN
`, parentFile)
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, script), c)
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "bypass"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
	childID := findChild(t, e.env, id)
	awaitSettled(ctx, t, e.env, childID)
	reqs := c.requests()
	if len(reqs) != 1 {
		t.Fatalf("asked %d times, want once (for the parent's tree only): %+v", len(reqs), reqs)
	}
	if got := string(reqs[0].ToolCall.ToolCallId); got != childID+"/call-parent" {
		t.Errorf("asked for %s, want the write into the parent's tree", got)
	}
	worktree := filepath.Join(cwd, ".acp-agent", "worktrees", childID)
	if data, err := os.ReadFile(filepath.Join(worktree, "inside.txt")); err != nil || string(data) != "in the worktree\n" {
		t.Errorf("worktree inside.txt = %q, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "inside.txt")); err == nil {
		t.Error("the child's relative write landed in the parent's tree")
	}
	if data, err := os.ReadFile(parentFile); err != nil || !strings.Contains(string(data), "parent tree") {
		t.Errorf("parent.txt after allow-once = %q, %v", data, err)
	}
}
