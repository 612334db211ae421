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
	dir, data, cwd := crashRepo(t)
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
	// The child asks after the prompt: this client answers at any time
	// and says so (else the question waits for a next prompt).
	parent := p.newSessionAnsweringAnytime(t, cwd)
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

// The binary is SIGKILLed while a foreground child isolated in a worktree
// runs a command: its call never returns, so nothing settled the
// worktree. The next process settles it when the parent is loaded, by the
// rule a return follows: untouched, it is removed with its branch;
// changed, it is kept, and the load shows where, on which branch and what
// changed. The root's log records it once: a third process's load does
// nothing more.
func TestKilledForegroundWorktreeIsSettledAtLoad(t *testing.T) {
	tests := []struct {
		name string
		work string // what the child's command does before it sleeps
		// after, when set, runs between the kill and the load: it damages
		// the worktree or holds the child's log as a live agent would; the
		// returned release (may be nil) runs before a load that settles.
		after   func(t *testing.T, worktree, childLog string) (release func())
		kept    bool
		notice  []string
		listing string
	}{
		{"untouched", "true", nil, false,
			[]string{"did not return: the agent stopped while it ran.", "Its worktree made no changes and was removed (branch acp-agent/"},
			"worktree removed with its branch acp-agent/"},
		{"changed", "echo new > new.txt", nil, true,
			[]string{"did not return: the agent stopped while it ran.", "Its work is committed on branch acp-agent/", "worktree kept at ", "1 file changed, 1 insertion(+)", "new.txt | 1 +"},
			"1 file changed, 1 insertion(+)"},
		// Its .git file gone, git would answer for the repository (clean):
		// it is kept, with the reason, and nothing is removed.
		{"broken worktree", "echo new > new.txt", func(t *testing.T, worktree, _ string) func() {
			if err := os.Remove(filepath.Join(worktree, ".git")); err != nil {
				t.Fatal(err)
			}
			return nil
		}, true, []string{"Its worktree is kept at ", "git could not tell whether it changed", "is not a git worktree any more"}, "changes unknown"},
		// While another process holds the child's log, a load leaves the
		// worktree alone; once it is released, the next load settles it.
		{"held by a live agent", "true", func(t *testing.T, _, childLog string) func() {
			f, err := os.Open(childLog)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}, false, []string{"Its worktree made no changes and was removed"}, "worktree removed with its branch acp-agent/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, data, cwd := crashRepo(t)
			pidFile := filepath.Join(dir, "pid")
			script := fmt.Sprintf(`model:
  main:
    - tool_calls: [{id: call_fg, name: subagent, arguments: '{"description": "Iso", "prompt": "work", "isolation": "worktree", "run_in_background": false}'}]
    - text: UNREACHED
  Iso:
    - tool_calls: [{id: call_sleep, name: bash, arguments: '{"command": "%s; echo $$ > %s; sleep 30"}'}]
    - text: DONE
`, tt.work, pidFile)
			p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, script))
			p.answerPermissions("allow-once")
			parent := p.newSession(t, cwd)
			_ = p.promptAsync(parent, "go")
			awaitPIDFile(t, pidFile)
			child := onlyWorktree(t, cwd)
			worktree := filepath.Join(cwd, ".acp-agent", "worktrees", child)
			branch := "acp-agent/" + child
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			_ = p.cmd.Wait()
			if _, err := os.Stat(worktree); err != nil {
				t.Fatalf("the worktree did not survive the kill: %v", err)
			}

			// The next process settles it when the parent is loaded.
			load := func(t *testing.T) *proc {
				p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), "model:\n  main: []\n"))
				var init, loaded map[string]any
				p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
				p.call(t, "session/load", map[string]any{"sessionId": parent, "cwd": cwd, "mcpServers": []any{}}, &loaded)
				return p
			}
			if tt.after != nil {
				if release := tt.after(t, worktree, filepath.Join(data, "sessions", child+".jsonl")); release != nil {
					p := load(t)
					p.stdin.Close()
					p.waitExit(t, exitBound)
					if n := settledRecords(t, data, parent); n != 0 {
						t.Fatalf("a load settled the worktree of a child held elsewhere (%d records)", n)
					}
					if _, err := os.Stat(worktree); err != nil {
						t.Fatalf("a load removed the worktree of a child held elsewhere: %v", err)
					}
					release()
				}
			}
			p2 := load(t)
			var shown string
			p2.awaitUpdate(t, func(u update) bool {
				if u.Kind == "agent_thought_chunk" && strings.Contains(u.Text(), "Subagent "+child) {
					shown = u.Text()
					return true
				}
				return false
			})
			for _, want := range append(tt.notice, worktree, branch) {
				if tt.kept || want != worktree {
					if !strings.Contains(shown, want) {
						t.Errorf("the load's notice lacks %q:\n%s", want, shown)
					}
				}
			}
			p2.stdin.Close()
			p2.waitExit(t, exitBound)
			_, err := os.Stat(worktree)
			branches := gitIn(t, cwd, "branch", "--list", "acp-agent/*")
			if tt.kept {
				if err != nil || branches == "" {
					t.Fatalf("the changed worktree was not kept: %v, branches %q", err, branches)
				}
				if b, err := os.ReadFile(filepath.Join(worktree, "new.txt")); err != nil || string(b) != "new\n" {
					t.Fatalf("the child's work is lost: %q %v", b, err)
				}
			} else {
				if !os.IsNotExist(err) || branches != "" {
					t.Fatalf("the untouched worktree was not removed: %v, branches %q", err, branches)
				}
				if s := gitIn(t, cwd, "status", "--porcelain", "--untracked-files=all"); s != "" {
					t.Errorf("the repository is not clean:\n%s", s)
				}
			}
			if code, out := cliRun(t, data, "agents", parent); code != 0 || !strings.Contains(out, tt.listing) {
				t.Errorf("agents after the load:\n%s", out)
			}

			// A second load does nothing more: one record, the same tree.
			p3 := load(t)
			p3.stdin.Close()
			p3.waitExit(t, exitBound)
			if n := settledRecords(t, data, parent); n != 1 {
				t.Errorf("%d settlement records in the parent's log after two loads, want 1", n)
			}
			if _, err := os.Stat(worktree); (err == nil) != tt.kept {
				t.Errorf("the second load changed the worktree: %v", err)
			}
		})
	}
}

// onlyWorktree returns the name of the one worktree folder under cwd.
func onlyWorktree(t *testing.T, cwd string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cwd, ".acp-agent", "worktrees"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 {
		t.Fatalf("worktrees %v, want one", names)
	}
	return names[0]
}

// settledRecords counts the subagent/worktree events of session id's log.
func settledRecords(t *testing.T, data, id string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `"type":"subagent/worktree"`)
}

// A foreground call that returned settled its worktree itself (kept, as
// its result says): a later load leaves it and records nothing.
func TestReturnedForegroundWorktreeIsNotSettledAgain(t *testing.T) {
	dir, data, cwd := crashRepo(t)
	script := `model:
  main:
    - tool_calls: [{id: call_fg, name: subagent, arguments: '{"description": "Iso", "prompt": "work", "isolation": "worktree", "run_in_background": false}'}]
    - text: RETURNED
  Iso:
    - tool_calls: [{id: call_edit, name: bash, arguments: '{"command": "echo new > new.txt"}'}]
    - text: DONE
`
	p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, script))
	p.answerPermissions("allow-once")
	parent := p.newSession(t, cwd)
	var res map[string]any
	p.call(t, "session/prompt", map[string]any{"sessionId": parent, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)
	child := onlyWorktree(t, cwd)
	worktree := filepath.Join(cwd, ".acp-agent", "worktrees", child)
	p.stdin.Close()
	p.waitExit(t, exitBound)

	p2 := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), "model:\n  main: []\n"))
	var init, loaded map[string]any
	p2.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	p2.call(t, "session/load", map[string]any{"sessionId": parent, "cwd": cwd, "mcpServers": []any{}}, &loaded)
	p2.stdin.Close()
	p2.waitExit(t, exitBound)
	if n := settledRecords(t, data, parent); n != 0 {
		t.Errorf("a load settled a worktree its call had settled (%d records)", n)
	}
	if b, err := os.ReadFile(filepath.Join(worktree, "new.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("the kept worktree changed: %q %v", b, err)
	}
}

// crashRepo makes a data directory and a git repository with one commit
// (a.txt) under a new temp dir, returning the three paths.
func crashRepo(t *testing.T) (dir, data, cwd string) {
	t.Helper()
	dir = t.TempDir()
	data, cwd = filepath.Join(dir, "data"), filepath.Join(dir, "repo")
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
	return dir, data, cwd
}

// newSessionAnsweringAnytime is newSession for a client that announces it
// answers questions also between prompts (_meta["acp-agent"]
// .questionsBetweenPrompts).
func (p *proc) newSessionAnsweringAnytime(t *testing.T, cwd string) string {
	t.Helper()
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"_meta": map[string]any{"acp-agent": map[string]any{"questionsBetweenPrompts": true}}}}, &init)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &created)
	p.cwd = cwd
	return created.SessionID
}
