package main

// The worktree delegation benchmark through the binary: in a generated
// repository of about 10,000 files, how long a background delegation with
// isolation "worktree" takes to return its tool result, and to reach the
// child's first model request, next to `git worktree add` alone in the
// same repository (run in turn, pair by pair).
//
//	go test ./cmd/acp-agent -run '^$' -bench BenchmarkWorktreeDelegation -benchtime 5x
//
// For the whole process side by side, the test binary's bench-delegate
// command runs one delegation (see benchDelegateCommand).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/app/cli"
)

// benchRepo makes a git repository of dirs×files small text files in one
// commit.
func benchRepo(b *testing.B, dirs, files int) string {
	b.Helper()
	repo := filepath.Join(b.TempDir(), "repo")
	for d := range dirs {
		dir := filepath.Join(repo, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range files {
			body := fmt.Sprintf("package pkg%03d\n\n// File %d of package %d.\nfunc F%d() int { return %d }\n", d, f, d, f, d*files+f)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, args := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "-A"}, {"commit", "-q", "-m", "generated"}} {
		cmd := exec.Command("git", append([]string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func BenchmarkWorktreeDelegation(b *testing.B) {
	repo := benchRepo(b, 100, 100)
	dir := b.TempDir()
	data := filepath.Join(dir, "data")
	n := b.N
	var script strings.Builder
	script.WriteString("model:\n  main:\n")
	for i := range n {
		fmt.Fprintf(&script, "    - tool_calls: [{id: call_%d, name: subagent, arguments: '{\"description\": \"Iso\", \"prompt\": \"work\", \"isolation\": \"worktree\"}'}]\n    - text: STARTED\n    - text: NOTED\n", i)
	}
	script.WriteString("  Iso:\n")
	for range n {
		script.WriteString("    - text: DONE\n")
	}
	marker := filepath.Join(dir, "first-request")
	p := startProcEnv(b, []string{firstRequestEnv + "=" + marker}, "--data-dir", data, "--model", "script:"+writeBenchScript(b, dir, script.String()), "crash-serve")
	parent := p.newSession(b, repo)
	var toResult, toFirst, gitAlone []time.Duration
	b.ResetTimer()
	for i := range n {
		os.Remove(marker)
		call := fmt.Sprintf("call_%d", i)
		start := time.Now()
		_ = p.promptAsync(parent, "go")
		p.awaitUpdate(b, func(u update) bool {
			return u.ToolCallID == call && strings.Contains(string(u.Content), "its worktree is being checked out")
		})
		toResult = append(toResult, time.Since(start))
		for {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("the child's first model request never came\n%s", p.stderr)
			}
			time.Sleep(time.Millisecond)
		}
		toFirst = append(toFirst, time.Since(start))
		p.awaitUpdate(b, func(u update) bool { return u.Kind == "agent_message_chunk" && u.Text() == "NOTED" })
		p.mu.Lock()
		p.updates = nil // the next round's awaits start afresh
		p.mu.Unlock()

		// git worktree add alone, in the same repository, in turn.
		path := filepath.Join(dir, fmt.Sprintf("alone-%d", i))
		add := exec.Command("git", "-c", "gc.auto=0", "worktree", "add", "-q", "-b", fmt.Sprintf("alone-%d", i), path, "HEAD")
		add.Dir = repo
		t0 := time.Now()
		if out, err := add.CombinedOutput(); err != nil {
			b.Fatalf("git worktree add: %v\n%s", err, out)
		}
		gitAlone = append(gitAlone, time.Since(t0))
		rm := exec.Command("git", "-c", "gc.auto=0", "worktree", "remove", "--force", path)
		rm.Dir = repo
		_ = rm.Run()
	}
	b.StopTimer()
	p.stdin.Close()
	p.waitExit(b, time.Minute)
	ratios := make([]time.Duration, n) // first request / git alone, ×1000
	for i := range n {
		ratios[i] = time.Duration(float64(toFirst[i]) / float64(gitAlone[i]) * 1000)
	}
	b.ReportMetric(float64(median(toResult).Microseconds())/1000, "result-ms")
	b.ReportMetric(float64(median(toFirst).Microseconds())/1000, "first-request-ms")
	b.ReportMetric(float64(median(gitAlone).Microseconds())/1000, "git-add-alone-ms")
	b.ReportMetric(float64(median(ratios))/1000, "first/git-ratio")
}

func writeBenchScript(b *testing.B, dir, s string) string {
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchDelegateCommand is "acp-agent bench-delegate REPO SCRIPT" (test
// binary only): the whole process of one worktree delegation, for a
// whole-process comparison with `git worktree add` alone. It starts
// crash-serve on the data directory, opens a session in REPO, sends one
// prompt (SCRIPT's main starts a background child with isolation
// "worktree"), and exits 0 as soon as the child's first model request
// comes (the server is killed then).
func benchDelegateCommand() cli.Command {
	return cli.Command{
		Name:    "bench-delegate",
		Usage:   "bench-delegate REPO SCRIPT",
		Summary: "time one worktree delegation up to the child's first model request (benchmarks only)",
		Run: func(ctx context.Context, env *cli.Env, args []string) error {
			if len(args) != 2 {
				return errors.New("bench-delegate REPO SCRIPT")
			}
			tb := &cliTB{}
			defer tb.cleanup()
			marker := filepath.Join(env.Flags.DataDir, fmt.Sprintf("first-request-%d", os.Getpid()))
			p := startProcEnv(tb, []string{firstRequestEnv + "=" + marker}, "--data-dir", env.Flags.DataDir, "--model", "script:"+args[1], "crash-serve")
			parent := p.newSession(tb, args[0])
			_ = p.promptAsync(parent, "go")
			for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(time.Millisecond) {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					return errors.New("the child's first model request never came")
				}
			}
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			return nil
		},
	}
}

// cliTB is the testing.TB of a helper command: a failure prints and
// exits, cleanups run at the end.
type cliTB struct {
	testing.TB
	cleanups []func()
}

func (c *cliTB) Helper()                   {}
func (c *cliTB) Logf(string, ...any)       {}
func (c *cliTB) Cleanup(f func())          { c.cleanups = append(c.cleanups, f) }
func (c *cliTB) Fatal(args ...any)         { fmt.Fprintln(os.Stderr, args...); os.Exit(1) }
func (c *cliTB) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(1) }
func (c *cliTB) cleanup() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}
