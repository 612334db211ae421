package main

// Crash, signal and cancel tests of a worktree child's start: whatever
// ends it (kill -9 at each named step of making the worktree, SIGTERM or
// session/cancel during the checkout), after the next start no worktree
// or branch exists that no listing shows.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// isoScript starts one background child isolated in a worktree.
const isoScript = `model:
  main:
    - tool_calls: [{id: call_start, name: subagent, arguments: '{"description": "Iso", "prompt": "work", "isolation": "worktree"}'}]
    - text: STARTED
    - text: NOTED
    - text: NOTED
  Iso:
    - text: DONE
    - text: DONE
`

// leftovers lists the acp-agent worktree folders and branches of repo.
func leftovers(t *testing.T, repo string) (folders, branches []string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(repo, ".acp-agent", "worktrees"))
	for _, e := range entries {
		if e.IsDir() {
			folders = append(folders, e.Name())
		}
	}
	for _, b := range strings.Fields(gitIn(t, repo, "branch", "--list", "acp-agent/*")) {
		if b != "*" && b != "+" {
			branches = append(branches, strings.TrimPrefix(b, "acp-agent/"))
		}
	}
	return folders, branches
}

// assertListed fails when a worktree folder or branch of repo is not
// shown by `acp-agent agents parent`.
func assertListed(t *testing.T, data, repo, parent string) {
	t.Helper()
	folders, branches := leftovers(t, repo)
	if len(folders)+len(branches) == 0 {
		return
	}
	_, out := cliRun(t, data, "agents", parent)
	for _, id := range append(folders, branches...) {
		if !strings.Contains(out, "acp-agent/"+id) {
			t.Errorf("worktree or branch %s is left and not listed:\n%s", id, out)
		}
	}
}

// restart starts a plain process on data and waits for initialize: the
// journal sweep runs before the server answers.
func restart(t *testing.T, data string) {
	t.Helper()
	p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), "model:\n  main: []\n"))
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	p.stdin.Close()
	p.waitExit(t, exitBound)
}

// kill -9 at each named step of making a child's worktree.
func TestWorktreeStartKilledAtEachStep(t *testing.T) {
	for _, point := range []string{worktree.FaultIntent, worktree.FaultAdded, worktree.FaultRecorded} {
		t.Run(point, func(t *testing.T) {
			dir, data, cwd := crashRepo(t)
			p := startProcEnv(t, []string{worktreeCrashEnv + "=" + point}, "--data-dir", data, "--model", "script:"+writeScript(t, dir, isoScript), "crash-serve")
			parent := p.newSession(t, cwd)
			_ = p.promptAsync(parent, "go")
			err := p.cmd.Wait()
			if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the process was not killed at %s: %v\nstderr:\n%s", point, err, p.stderr)
			}
			if entries, _ := os.ReadDir(filepath.Join(data, "worktree-intents")); len(entries) == 0 {
				t.Fatalf("no intent was journaled before the kill at %s", point)
			}
			restart(t, data)
			folders, branches := leftovers(t, cwd)
			if point != worktree.FaultRecorded && len(folders)+len(branches) > 0 {
				t.Errorf("left after the next start: folders %v, branches %v", folders, branches)
			}
			assertListed(t, data, cwd, parent)
			if entries, _ := os.ReadDir(filepath.Join(data, "worktree-intents")); len(entries) != 0 {
				t.Errorf("intents left after the sweep: %v", entries)
			}
			if point != worktree.FaultRecorded {
				if s := gitIn(t, cwd, "status", "--porcelain", "--untracked-files=all"); s != "" {
					t.Errorf("the repository is not clean:\n%s", s)
				}
			}
		})
	}
}

// slowGit puts a git first in PATH that, for `worktree add`, writes its pid
// to pidFile and waits (as a long checkout does) before running the real
// git; every other command is the real git.
func slowGit(t *testing.T, pidFile string) []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *\"worktree add\"*) echo $$ > %s; sleep 60 & wait;; esac\nexec %s \"$@\"\n", pidFile, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// SIGTERM during a checkout: git's group is killed at once, the process
// exits promptly (well before the checkout would end) and nothing is left
// after the next start.
func TestWorktreeCheckoutSIGTERM(t *testing.T) {
	dir, data, cwd := crashRepo(t)
	pidFile := filepath.Join(dir, "git.pid")
	p := startProcEnv(t, slowGit(t, pidFile), "--data-dir", data, "--model", "script:"+writeScript(t, dir, isoScript))
	parent := p.newSession(t, cwd)
	_ = p.promptAsync(parent, "go")
	gitPID := awaitPIDFile(t, pidFile)
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// A generous bound for a loaded machine: the checkout itself would
	// take 60 s; the figure is within a second.
	p.waitExit(t, exitBound)
	t.Logf("exited %v after SIGTERM during the checkout", time.Since(start).Round(time.Millisecond))
	if err := syscall.Kill(gitPID, 0); err == nil {
		t.Errorf("git (pid %d) outlived the agent", gitPID)
	}
	restart(t, data)
	if folders, branches := leftovers(t, cwd); len(folders)+len(branches) > 0 {
		t.Errorf("left after the next start: folders %v, branches %v", folders, branches)
	}
	if s := gitIn(t, cwd, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("the repository is not clean:\n%s", s)
	}
}

// A background delegation with isolation returns while git is still
// checking out (the checkout is the child's own start); an interrupt of
// the starting child kills git's process group at once, the lease removes
// what was made, and the parent is told the child did not start.
func TestWorktreeCheckoutInterrupted(t *testing.T) {
	dir, data, cwd := crashRepo(t)
	pidFile := filepath.Join(dir, "git.pid")
	// Deterministic ids: the first child is 8ee0dfe6-….
	const child = "8ee0dfe6-15fb-46d6-942d-3cf420d8fb36"
	script := `model:
  main:
    - tool_calls: [{id: call_start, name: subagent, arguments: '{"description": "Iso", "prompt": "work", "isolation": "worktree"}'}]
    - tool_calls: [{id: call_wait, name: bash, arguments: '{"command": "while [ ! -s ` + pidFile + ` ]; do sleep 0.05; done"}'}]
    - tool_calls: [{id: call_stop, name: interrupt_agent, arguments: '{"agent_id": "` + child + `"}'}]
    - text: INTERRUPTED
    - text: NOTED
  Iso:
    - text: DONE
`
	env := append(slowGit(t, pidFile), "ACP_AGENT_DETERMINISTIC=1")
	p := startProcEnv(t, env, "--data-dir", data, "--model", "script:"+writeScript(t, dir, script))
	p.answerPermissions("allow-once")
	parent := p.newSession(t, cwd)
	_ = p.promptAsync(parent, "go")
	gitPID := awaitPIDFile(t, pidFile)
	// The call returns without waiting for git: the checkout sleeps a
	// minute, and the parent's turn goes on to its interrupt (a call that
	// waited for git would hold the turn past every wait here).
	p.awaitUpdate(t, func(u update) bool {
		return u.ToolCallID == "call_start" && strings.Contains(string(u.Content), "started subagent "+child+" (its worktree is being checked out)")
	})
	p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && u.Text() == "NOTED" })
	if err := syscall.Kill(gitPID, 0); err == nil {
		t.Errorf("git (pid %d) outlived the interrupt", gitPID)
	}
	if folders, branches := leftovers(t, cwd); len(folders)+len(branches) > 0 {
		t.Errorf("left after the interrupt: folders %v, branches %v", folders, branches)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "worktree-intents")); len(entries) != 0 {
		t.Errorf("intents left after the interrupt: %v", entries)
	}
	p.stdin.Close()
	p.waitExit(t, exitBound)
}

// The person merges or discards a settled worktree child's work from the
// command line: its work was committed on its branch when it settled;
// merge brings it into the repository's branch, discard drops it, and
// either way its worktree and branch are gone and the listing says so.
func TestAgentsMergeAndDiscard(t *testing.T) {
	for _, verb := range []string{"merge", "discard"} {
		t.Run(verb, func(t *testing.T) {
			dir, data, cwd := crashRepo(t)
			script := `model:
  main:
    - tool_calls: [{id: call_start, name: subagent, arguments: '{"description": "Add a file", "prompt": "work", "isolation": "worktree"}'}]
    - text: STARTED
    - text: NOTED
  Add a file:
    - tool_calls: [{id: call_edit, name: bash, arguments: '{"command": "echo new > new.txt"}'}]
    - text: Added new.txt.
`
			p := startProc(t, "--data-dir", data, "--model", "script:"+writeScript(t, dir, script))
			p.answerPermissions("allow-once")
			parent := p.newSessionAnsweringAnytime(t, cwd) // the child asks after the parent's turn
			_ = p.promptAsync(parent, "go")
			p.awaitUpdate(t, func(u update) bool { return u.Kind == "agent_message_chunk" && u.Text() == "NOTED" })
			p.stdin.Close()
			p.waitExit(t, exitBound)
			folders, _ := leftovers(t, cwd)
			if len(folders) != 1 {
				t.Fatalf("worktrees %v, want the kept one", folders)
			}
			child := folders[0]
			if msg := gitIn(t, cwd, "log", "-1", "--format=%s", "acp-agent/"+child); msg != "Add a file" {
				t.Fatalf("the child's work is not committed on its branch: %q", msg)
			}
			code, out := cliRun(t, data, "agents", verb, child)
			if code != 0 {
				t.Fatalf("agents %s: %d\n%s", verb, code, out)
			}
			_, err := os.Stat(filepath.Join(cwd, "new.txt"))
			if (verb == "merge") != (err == nil) {
				t.Errorf("after %s, new.txt in the repository: %v\n%s", verb, err, out)
			}
			if folders, branches := leftovers(t, cwd); len(folders)+len(branches) > 0 {
				t.Errorf("left after %s: %v %v", verb, folders, branches)
			}
			if s := gitIn(t, cwd, "status", "--porcelain", "--untracked-files=all"); s != "" {
				t.Errorf("the repository is not clean:\n%s", s)
			}
			want := map[string]string{"merge": "work merged (commit ", "discard": "work discarded; worktree removed"}[verb]
			if _, out := cliRun(t, data, "agents", parent); !strings.Contains(out, want) {
				t.Errorf("agents after %s:\n%s", verb, out)
			}
			if code, out := cliRun(t, data, "agents", verb, child); code == 0 || !strings.Contains(out, "no worktree or branch left") {
				t.Errorf("a second %s: %d\n%s", verb, code, out)
			}
		})
	}
}
