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

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
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

// TestWorktreeChildDeniedParentFile: the project's rules are read against
// the project root. A child isolated in a worktree that reads the
// parent's config/prod.yml, which the project's settings deny (by its
// absolute path, through "..", or a hard link in the worktree to it under
// a wildcard rule), is refused with the rule and asked nothing; its own
// config/prod.yml in the worktree is denied as well; an outside file no
// rule names is still asked about.
func TestWorktreeChildDeniedParentFile(t *testing.T) {
	ctx := ctxFor(t)
	cwd, err := filepath.EvalSymlinks(tempCwd(t))
	if err != nil {
		t.Fatal(err)
	}
	gitInit(t, cwd)
	writeFile(t, filepath.Join(cwd, "config", "prod.yml"), "db: production\n")
	writeFile(t, filepath.Join(cwd, "secrets", "api.key"), "KEY=production\n")
	gitCommitAll(t, cwd)
	writeFile(t, filepath.Join(cwd, ".acp-agent", "settings.json"),
		`{"permissions": {"deny": ["read(config/prod.yml)", "read(secrets/*)"]}}`)
	linkDir := filepath.Join(cwd, "links") // outside the child's worktree, in the parent's tree
	if err := os.MkdirAll(linkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(cwd, "secrets", "api.key"), filepath.Join(linkDir, "notes.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	script := fmt.Sprintf(`
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Isolated", "prompt": "Read the config.", "isolation": "worktree"}'
    - text: STARTED
    - text: NOTED
    - text: AGAIN
    - text: AGAIN
    - text: AGAIN
    - text: AGAIN
    - text: AGAIN
  Isolated:
    - tool_calls:
        - {id: call-abs, name: read, arguments: '{"path": %q}'}
        - {id: call-up, name: read, arguments: '{"path": "../../../config/prod.yml"}'}
        - {id: call-own, name: read, arguments: '{"path": "config/prod.yml"}'}
        - {id: call-link, name: read, arguments: '{"path": %q}'}
        - {id: call-readme, name: read, arguments: '{"path": %q}'}
    - text: READ
`, filepath.Join(cwd, "config", "prod.yml"), filepath.Join(linkDir, "notes.txt"), filepath.Join(cwd, "README"))
	c := newWSClient(false, false, "reject-once")
	e := startWS(t, loadScript(t, script), c)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	// Every question the child asks is released by a prompt of the root
	// (the client answers between prompts only), so that a question
	// asked wrongly shows in the list below rather than as a hang.
	childID := findChild(t, e.env, id)
	poll(ctx, t, "child "+childID+" settles", func() bool {
		if e.app.Server.Questions().Held(id) > 0 {
			if _, err := e.prompt(ctx, id, "go on"); err != nil {
				t.Fatalf("the prompt releasing a held question: %v", err)
			}
		}
		snap, err := e.app.Persist.Inspect(ctx, childID)
		if err != nil {
			return false
		}
		n := 0
		for _, ev := range snap.Events {
			if ev.Type == session.TypeToolResult {
				n++
			}
		}
		return n == 5
	})
	awaitSettled(ctx, t, e.env, childID)
	results := toolResultsOf(ctx, t, e, childID)
	for call, rule := range map[string]string{
		"call-abs": "read(config/prod.yml)", "call-up": "read(config/prod.yml)",
		"call-own": "read(config/prod.yml)", "call-link": "read(secrets/*)",
	} {
		d, ok := results[call]
		if !ok || d.Error == nil || d.Error.Code != workspace.CodeRuleDenies || !strings.Contains(d.Error.Message, fmt.Sprintf("%q", rule)) {
			t.Errorf("%s: %+v; want %s naming %q", call, d.Error, workspace.CodeRuleDenies, rule)
		}
		if d.Error != nil && strings.Contains(d.Error.Message, "production") {
			t.Errorf("%s: the refusal shows the file: %s", call, d.Error.Message)
		}
	}
	reqs := c.requests()
	if len(reqs) != 1 || string(reqs[0].ToolCall.ToolCallId) != childID+"/call-readme" {
		var ids []string
		for _, r := range reqs {
			ids = append(ids, string(r.ToolCall.ToolCallId))
		}
		t.Fatalf("questions %v; want one, for the parent's README (no rule names it)", ids)
	}
	if d := results["call-readme"]; d.Error == nil || d.Error.Code != workspace.CodePermissionRejected {
		t.Errorf("call-readme: %+v; want %s (asked, rejected)", d.Error, workspace.CodePermissionRejected)
	}
}

// gitCommitAll commits every file of dir (pinned identity, no user
// configuration).
func gitCommitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"commit", "--quiet", "-m", "more"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
