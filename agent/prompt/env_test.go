package prompt

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fakeGit puts an executable git running script first on PATH.
func fakeGit(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestProbe_TimeoutBoundsTheWait runs Probe against a fake git: one that
// hangs (its shell waits on a child that keeps the output pipe open, the
// case a plain kill of git does not end) must not hold Probe past its
// timeout, and leaves the git facts unknown as a timeout does; one that
// answers shows the fake is what Probe ran.
func TestProbe_TimeoutBoundsTheWait(t *testing.T) {
	cases := []struct {
		name       string
		script     string
		gitFile    bool // .git is a file (worktree): the branch needs git
		wantBranch string
		wantDirty  bool
		wantUnsure bool // status did not answer: the prompt must not call the tree clean
	}{
		{name: "hanging git, branch from HEAD", script: "sleep 30", wantBranch: "main", wantUnsure: true},
		{name: "hanging git in a worktree", script: "sleep 30", gitFile: true, wantUnsure: true},
		{name: "hanging git after some output", script: "echo ' M x'; sleep 30", wantBranch: "main", wantUnsure: true},
		{name: "answering git", script: "echo ' M x'", wantBranch: "main", wantDirty: true},
		{name: "failing git", script: "exit 128", wantBranch: "main", wantUnsure: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeGit(t, tc.script)
			root := t.TempDir()
			if tc.gitFile {
				write(t, filepath.Join(root, ".git"), "gitdir: "+filepath.Join(root, "elsewhere")+"\n")
			} else {
				write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
			}
			done := make(chan Env, 1)
			go func() {
				done <- Probe(t.Context(), root, ProbeOptions{Now: start, Timeout: 200 * time.Millisecond})
			}()
			// The fake sleeps 30 s; a few seconds is far above the
			// timeout and far below the sleep.
			deadline, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			select {
			case e := <-done:
				if e.GitRoot != root || e.Branch != tc.wantBranch || e.Dirty != tc.wantDirty || e.StatusUnknown != tc.wantUnsure {
					t.Errorf("got root %q branch %q dirty %v unknown %v, want %q %q %v %v", e.GitRoot, e.Branch, e.Dirty, e.StatusUnknown, root, tc.wantBranch, tc.wantDirty, tc.wantUnsure)
				}
			case <-deadline.Done():
				t.Fatal("Probe still waiting for git long after its 200ms timeout")
			}
		})
	}
}

// TestPending runs the environment probe ahead of its use and checks
// that Env gives what Probe gives, whether the probe was started before,
// not at all, or is still running when Env's context ends.
func TestPending(t *testing.T) {
	cases := []struct {
		name      string
		script    string
		start     bool // Start on a goroutine before Env
		cancelEnv bool // Env's context is already done
		wantDirty bool
	}{
		{name: "started ahead", script: "echo ' M x'", start: true, wantDirty: true},
		{name: "not started: Env probes itself", script: "echo ' M x'", wantDirty: true},
		{name: "Env's context ends while git hangs", script: "sleep 30", start: true, cancelEnv: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeGit(t, tc.script)
			root := t.TempDir()
			write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
			o := ProbeOptions{Now: start, Timeout: 3 * time.Second}
			p := NewPending(root, o)
			owner, stop := context.WithCancel(t.Context())
			started := make(chan struct{})
			if tc.start {
				go func() { defer close(started); p.Start(owner) }()
			} else {
				close(started)
			}
			ctx := t.Context()
			if tc.cancelEnv {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			got := p.Env(ctx)
			want := Env{Cwd: root, GitRoot: root, Branch: "main", Dirty: tc.wantDirty}
			if got.Cwd != want.Cwd || got.GitRoot != want.GitRoot || got.Branch != want.Branch || got.Dirty != want.Dirty {
				t.Errorf("Env = %+v, want %+v", got, want)
			}
			if again := p.Env(t.Context()); !tc.cancelEnv && again != got {
				t.Errorf("second Env = %+v, want the first %+v", again, got)
			}
			stop() // the owner's cancel ends a probe under way
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("Start did not return after its context ended")
			}
		})
	}
}

// TestProbe_RunsNoPlantedCode: a repository whose config names an
// fsmonitor (as a command the agent ran may have left it) does not have
// it run by the probe's git, which still answers (the untracked file
// shows as dirty). Control: plain git status in the same repository runs
// the fsmonitor, so the planted config is one git obeys.
func TestProbe_RunsNoPlantedCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	root := t.TempDir()
	gitCmd := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitCmd("init", "--quiet", "--initial-branch=main")
	write(t, filepath.Join(root, "untracked.txt"), "x\n")
	ran := filepath.Join(t.TempDir(), "ran")
	monitor := filepath.Join(root, ".git", "planted-fsmonitor")
	if err := os.WriteFile(monitor, []byte("#!/bin/sh\necho ran >> "+ran+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitCmd("config", "core.fsmonitor", monitor)

	e := Probe(t.Context(), root, ProbeOptions{Now: start})
	if e.GitRoot != root || e.Branch != "main" || !e.Dirty {
		t.Errorf("probe got root %q branch %q dirty %v, want %q main dirty", e.GitRoot, e.Branch, e.Dirty, root)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the probe's git ran the planted fsmonitor")
	}

	gitCmd("status", "--porcelain")
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("control: plain git status did not run the planted fsmonitor (%v): the test proves nothing", err)
	}
}

// TestProbe_IgnoresInheritedGitVariables: an agent started from a git
// hook (or a shell that exported them) has GIT_DIR and GIT_WORK_TREE
// set; the probe describes the session's repository all the same (its
// git goes through internal/gitrun, which drops them). Here the
// session's repository is clean and the one the variables name is dirty.
// Control: plain git status with those variables reports the other
// repository's changes.
func TestProbe_IgnoresInheritedGitVariables(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	root, other := t.TempDir(), t.TempDir()
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn(root, "init", "--quiet", "--initial-branch=main")
	write(t, filepath.Join(root, "a.txt"), "a\n")
	gitIn(root, "add", "a.txt")
	gitIn(root, "commit", "--quiet", "-m", "a")
	gitIn(other, "init", "--quiet", "--initial-branch=other")
	write(t, filepath.Join(other, "untracked.txt"), "x\n")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)

	e := Probe(t.Context(), root, ProbeOptions{Now: start})
	if e.GitRoot != root || e.Branch != "main" || e.Dirty || e.StatusUnknown {
		t.Errorf("probe got root %q branch %q dirty %v unknown %v, want %q main clean", e.GitRoot, e.Branch, e.Dirty, e.StatusUnknown, root)
	}

	control := exec.Command("git", "status", "--porcelain")
	control.Dir = root
	if out, err := control.Output(); err != nil || len(out) == 0 {
		t.Fatalf("control: plain git status with GIT_DIR set reported %q, %v: the test proves nothing", out, err)
	}
}
