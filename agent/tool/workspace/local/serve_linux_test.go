package local

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

// openRunning opens a registry under t's temp dir, closed at the test's end.
func openRunning(t *testing.T) *Running {
	t.Helper()
	r, err := OpenRunning(filepath.Join(t.TempDir(), "running"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Commands of one registry run under one reaper process (not the agent,
// not a process per command), each in a cgroup of its own, with their
// exit status, signal, output and an empty stdin as before.
func TestServedCommandsShareOneReaper(t *testing.T) {
	needCgroup(t)
	r := openRunning(t)
	c := Commands{Running: r, KillGrace: 200 * time.Millisecond}
	dir := t.TempDir()
	for _, tc := range []struct {
		name, command, output, signal string
		exit                          int
	}{
		{"output and status", `echo out; echo err >&2; exit 3`, "out\nerr\n", "", 3},
		{"empty stdin", `cat; echo done`, "done\n", "", 0},
		{"signal", `kill -TERM $$`, "", "terminated", 0},
		{"own cgroup", `grep '^0::' /proc/self/cgroup | grep -c acp-agent-`, "1\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Run(context.Background(), workspace.Command{Command: tc.command, Cwd: dir, Timeout: time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tc.output {
				t.Errorf("output %q, want %q", res.Output, tc.output)
			}
			if tc.signal != "" {
				if res.Signal != tc.signal {
					t.Errorf("signal %q, want %q", res.Signal, tc.signal)
				}
			} else if res.ExitCode == nil || *res.ExitCode != tc.exit {
				t.Errorf("exit %v (signal %q), want %d", res.ExitCode, res.Signal, tc.exit)
			}
		})
	}
	parents := map[string]bool{}
	for range 2 {
		res, err := c.Run(context.Background(), workspace.Command{Command: `echo $PPID`, Cwd: dir, Timeout: time.Minute}, nil)
		if err != nil {
			t.Fatal(err)
		}
		parents[strings.TrimSpace(res.Output)] = true
	}
	if len(parents) != 1 {
		t.Errorf("two commands ran under %v: one reaper for all", parents)
	}
	if parents[strconv.Itoa(os.Getpid())] {
		t.Error("the shell ran as the agent's own child, not under the reaper")
	}
}

// A served command that times out is stopped (SIGTERM, SIGKILL after the
// grace) with what it started, well before its sleep would end.
func TestServedCommandTimesOut(t *testing.T) {
	needCgroup(t)
	c := Commands{Running: openRunning(t), KillGrace: 200 * time.Millisecond}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "c.pid")
	began := time.Now()
	res, err := c.Run(context.Background(), workspace.Command{
		Command: "trap '' TERM; setsid env -i sleep 1000 & echo $! > " + pidFile + "; sleep 30",
		Cwd:     dir, Timeout: 300 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Errorf("not timed out: %+v", res)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if pid := readPID(t, pidFile); !proctest.Gone(pid) {
		t.Errorf("the escapee %d survived the timeout", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// A command that kills its reaper (its parent: the reaper server, or its
// own reaper) ends at once (its shell dies with the reaper) and keeps no
// escapee: the agent kills what is left in the command's cgroup. The
// next command runs under a new reaper.
func TestCommandKillingItsReaperKeepsNoEscapee(t *testing.T) {
	needCgroup(t)
	for _, served := range []bool{true, false} {
		t.Run(map[bool]string{true: "server", false: "own reaper"}[served], func(t *testing.T) {
			c := Commands{KillGrace: 200 * time.Millisecond}
			if served {
				c.Running = openRunning(t)
			}
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "c.pid")
			marker := NewMarker()
			began := time.Now()
			res, err := c.Run(context.Background(), workspace.Command{
				Command: "setsid env -i sleep 1000 & echo $! > " + pidFile + "; echo $PPID > " + filepath.Join(dir, "reaper") + "; kill -9 $PPID; sleep 30",
				Cwd:     dir, Marker: marker, Timeout: time.Minute,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(began); took > 20*time.Second {
				t.Errorf("the command outlived its reaper: took %v", took)
			}
			if res.Signal != "killed" {
				t.Errorf("signal %q, want killed (the shell dies with its reaper)", res.Signal)
			}
			escapee := readPID(t, pidFile)
			for deadline := time.Now().Add(5 * time.Second); !proctest.Gone(escapee) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			}
			if !proctest.Gone(escapee) {
				t.Errorf("the escapee %d survived its command's reaper", escapee)
				_ = syscall.Kill(escapee, syscall.SIGKILL)
			}
			if cg := reaper.CgroupPath(marker); exists(cg) {
				t.Errorf("the command's cgroup %s is left", cg)
				reaper.KillCgroup(cg, time.Second)
			}
			res, err = c.Run(context.Background(), workspace.Command{Command: "echo $PPID", Cwd: dir, Timeout: time.Minute}, nil)
			if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("the next command: %v %+v", err, res)
			}
			killed := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "reaper")))))
			if strings.TrimSpace(res.Output) == killed {
				t.Errorf("the next command ran under the killed reaper %s", killed)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Closing the registry stops the server, which kills what still runs.
func TestClosingTheRegistryStopsServedCommands(t *testing.T) {
	needCgroup(t)
	r, err := OpenRunning(filepath.Join(t.TempDir(), "running"))
	if err != nil {
		t.Fatal(err)
	}
	c := Commands{Running: r, KillGrace: 200 * time.Millisecond}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "c.pid")
	done := make(chan workspace.CommandResult, 1)
	go func() {
		res, _ := c.Run(context.Background(), workspace.Command{
			Command: "setsid env -i sleep 1000 & echo $! > " + pidFile + "; sleep 1000", Cwd: dir, Timeout: time.Hour,
		}, nil)
		done <- res
	}()
	waitFile(t, pidFile)
	escapee := readPID(t, pidFile)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.Signal != "killed" {
			t.Errorf("signal %q, want killed", res.Signal)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the command still runs after the registry closed")
	}
	if !proctest.Gone(escapee) {
		t.Errorf("the escapee %d survived", escapee)
		_ = syscall.Kill(escapee, syscall.SIGKILL)
	}
}

// A command whose start does not fit in one message to the server (a
// large environment) runs under a reaper of its own, and the next
// command is served again: a failure of one start does not turn the
// server off.
func TestTooLargeStartRunsUnderItsOwnReaper(t *testing.T) {
	needCgroup(t)
	c := Commands{Running: openRunning(t), KillGrace: 200 * time.Millisecond}
	dir := t.TempDir()
	parent := func(env []string) string {
		t.Helper()
		res, err := c.Run(context.Background(), workspace.Command{Command: `echo $PPID`, Cwd: dir, Env: env, Timeout: time.Minute}, nil)
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("%v %+v", err, res)
		}
		return strings.TrimSpace(res.Output)
	}
	server := parent(nil)
	big := os.Environ()
	for i := range 10 {
		big = append(big, "BIG"+strconv.Itoa(i)+"="+strings.Repeat("x", 120<<10))
	}
	if own := parent(big); own == server {
		t.Errorf("the too-large command ran under the server %s", server)
	}
	if again := parent(nil); again != server {
		t.Errorf("the next command ran under %s, not the server %s", again, server)
	}
}

// A start whose context ends before the server confirmed it returns the
// context's error, and the command, started meanwhile, is stopped: a
// cancelled start leaves nothing running, and its cgroup goes.
func TestServedStartAbandonedByItsContextLeavesNothing(t *testing.T) {
	needCgroup(t)
	r := openRunning(t)
	srv := r.server()
	if srv == nil {
		t.Fatal("no reaper server")
	}
	dir := t.TempDir()
	abandoned := 0
	for i := range 5 {
		marker := NewMarker()
		cg := reaper.CgroupPath(marker)
		ec := exec.Command("/bin/sh", "-c", "sleep 30")
		ec.Env = append(os.Environ(), marker)
		ec.Dir = dir
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		run, _, err := srv.start(ctx, ec, cg, 100*time.Millisecond, pw)
		pw.Close()
		if err == nil {
			// The answer won the race: stop it as Run would.
			(&servedProc{srv: srv, run: run, grace: 100 * time.Millisecond}).stop()
		} else if errors.Is(err, context.Canceled) {
			abandoned++
		} else {
			t.Fatalf("start = %v, want the context's error", err)
		}
		// The server handles messages in order: once a later start is
		// answered, this one and its stop were handled.
		later := exec.Command("/bin/true")
		later.Env = os.Environ()
		if run, _, err := srv.start(context.Background(), later, reaper.CgroupPath(NewMarker()), time.Second, pw2(t)); err != nil {
			t.Fatal(err)
		} else {
			<-run.exited
		}
		for deadline := time.Now().Add(10 * time.Second); (exists(cg) || len(markedPIDs(marker)) > 0) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		}
		if left := markedPIDs(marker); len(left) > 0 || exists(cg) {
			t.Errorf("run %d: the abandoned command left %v (cgroup left: %v)", i, left, exists(cg))
			reaper.KillCgroup(cg, time.Second)
		}
		pr.Close()
	}
	if abandoned == 0 {
		t.Error("no start returned its context's error: the wait for the answer ignores the context")
	}
}

// pw2 is the write end of a pipe closed at the test's end, for a command
// whose output nobody reads.
func pw2(t *testing.T) *os.File {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	return pw
}

// A sandboxed command is served too, in the namespaces and under the
// Landlock rules of its sandbox: same reaper as an unsandboxed one, and
// still no write outside its writable directories.
func TestSandboxedCommandServed(t *testing.T) {
	needCgroup(t)
	sb := sandbox.New(sandbox.Policy{TempDir: t.TempDir()}, sandbox.Options{})
	if err := sb.Check(); err != nil {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	c := Commands{Running: openRunning(t), Sandbox: sb, KillGrace: 200 * time.Millisecond}
	cwd, outside := t.TempDir(), t.TempDir()
	run := func(command string, unsandboxed bool) workspace.CommandResult {
		t.Helper()
		res, err := c.Run(context.Background(), workspace.Command{Command: command, Cwd: cwd, Unsandboxed: unsandboxed, Timeout: time.Minute}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plain := strings.TrimSpace(run("echo $PPID", true).Output)
	boxed := run("echo $PPID; touch "+filepath.Join(outside, "x")+" 2>/dev/null && echo wrote", false)
	if boxed.Sandbox == "" {
		t.Fatal("the command did not run sandboxed")
	}
	if got := strings.TrimSpace(boxed.Output); got != plain {
		t.Errorf("sandboxed command: output %q, want its parent to be the reaper server %s (and no write outside)", got, plain)
	}
	if exists(filepath.Join(outside, "x")) {
		t.Error("the sandboxed command wrote outside its writable directories")
	}
}
