package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

const helperAgentEnv = "LOCAL_TEST_HELPER_AGENT_DIR"

// escapees are the pid files escapeeScript writes.
var escapees = []string{"a.pid", "b.pid", "c.pid", "d.pid"}

// escapeeScript starts, in dir, processes that leave the command's
// process group and session (setsid, with and without a fork), two of
// them without the marker (env -i), and writes their pids.
func escapeeScript(dir string) string {
	forked := func(name, prefix string) string {
		tmp, f := filepath.Join(dir, name+".tmp"), filepath.Join(dir, name)
		return "setsid -f " + prefix + "sh -c 'echo $$ > " + tmp + "; mv " + tmp + " " + f + "; exec sleep 60'; " +
			"while [ ! -s " + f + " ]; do sleep 0.01; done; "
	}
	return "setsid sleep 60 & echo $! > " + filepath.Join(dir, "a.pid") + "; " +
		forked("b.pid", "") +
		"setsid env -i sleep 1000 & echo $! > " + filepath.Join(dir, "c.pid") + "; " +
		forked("d.pid", "env -i ")
}

// Processes started with setsid are stopped when the command ends, times
// out or is cancelled.
func TestCommandsStopSetsidEscapees(t *testing.T) {
	for _, how := range []string{"ends", "times out", "cancelled"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			script := escapeeScript(dir) + "echo ready > " + filepath.Join(dir, "ready")
			timeout := time.Minute
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch how {
			case "times out":
				script += "; sleep 60"
				timeout = 5 * time.Second // long enough for the escapees to start under load
			case "cancelled":
				script += "; sleep 60"
				go func() {
					waitFile(t, filepath.Join(dir, "ready"))
					cancel()
				}()
			}
			_, err := Commands{KillGrace: 200 * time.Millisecond}.Run(ctx, workspace.Command{Command: script, Cwd: dir, Timeout: timeout}, nil)
			if how == "ends" && err != nil {
				t.Fatal(err)
			}
			for _, f := range escapees {
				pid := readPID(t, filepath.Join(dir, f))
				if !proctest.Gone(pid) {
					t.Errorf("setsid process %d (%s) survived the command", pid, f)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

func waitFile(t *testing.T, p string) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return
		}
	}
	t.Errorf("%s never appeared", p)
}

// helperAgent runs a command with a setsid escapee and a `sleep 30` in
// the group, and waits to be killed.
func helperAgent(dir string) {
	script := escapeeScript(dir) + "echo $$ > " + filepath.Join(dir, "pg.tmp") + "; mv " + filepath.Join(dir, "pg.tmp") + " " +
		filepath.Join(dir, "pg") + "; sleep 30"
	var c Commands
	if os.Getenv(helperServedEnv) != "" {
		// Under the reaper server of a registry, where there is one.
		r, err := OpenRunning(filepath.Join(dir, "running"))
		if err != nil {
			os.Exit(2)
		}
		c.Running = r
	}
	_, _ = c.Run(context.Background(), workspace.Command{Command: script, Cwd: dir, Timeout: time.Minute}, nil)
	os.Exit(3) // never reached in the test: the agent is killed first
}

// helperServedEnv makes helperAgent run its command with a registry.
const helperServedEnv = "LOCAL_TEST_HELPER_SERVED"

// The agent is SIGKILLed while `sleep 30` runs: nothing of the command's
// group, nor its setsid escapees (with the marker or without: env -i), is
// left.
func TestAgentKilledLeavesNothing(t *testing.T) {
	t.Run("own reaper", func(t *testing.T) { testAgentKilledLeavesNothing(t, false) })
	t.Run("server", func(t *testing.T) { testAgentKilledLeavesNothing(t, true) })
}

func testAgentKilledLeavesNothing(t *testing.T, served bool) {
	dir := t.TempDir()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), helperAgentEnv+"="+dir)
	if served {
		agent.Env = append(agent.Env, helperServedEnv+"=1")
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "pg"))
	pgid, ok := proctest.GroupOf(readPID(t, filepath.Join(dir, "pg")))
	if !ok {
		t.Fatal("the command's shell is not running")
	}
	var pids []int
	for _, f := range escapees {
		pids = append(pids, readPID(t, filepath.Join(dir, f)))
	}
	if live, _ := proctest.LiveGroupMembers(pgid); len(live) == 0 {
		t.Fatal("the command's group is not running")
	}
	killed := time.Now()
	_ = agent.Process.Kill()
	_ = agent.Wait()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left, _ = proctest.LiveGroupMembers(pgid)
		for _, pid := range pids {
			if !proctest.Gone(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes %v outlived the killed agent", left)
	}
	t.Logf("everything gone %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// KillMarked finds and kills the processes of a command by its marker (a
// restart uses it for markers recorded in the log).
func TestKillMarked(t *testing.T) {
	marker := NewMarker()
	cmd := exec.Command("sh", "-c", "setsid sleep 60 & wait")
	cmd.Env = append(os.Environ(), marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(markedPIDs(marker)) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if n := KillMarked(marker); n < 2 {
		t.Fatalf("killed %d, want the shell and its setsid child", n)
	}
	_ = cmd.Wait()
	if left := markedPIDs(marker); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	if !strings.HasPrefix(marker, MarkerVar+"=") {
		t.Fatal(marker)
	}
}

// BenchmarkCommandsRunTrue measures one short command end to end: group,
// watchdog, and the /proc sweep for escapees.
func BenchmarkCommandsRunTrue(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := (Commands{}).Run(context.Background(), workspace.Command{Command: "true", Cwd: dir, Timeout: time.Minute}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweepMarked measures one /proc scan for markers.
func BenchmarkSweepMarked(b *testing.B) {
	for b.Loop() {
		markedPIDs(NewMarker())
	}
}

// descendants finds every process below a root, whatever group or
// session it moved to and whatever its environment, and nothing else.
func TestDescendants(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string // starts processes below sh, each writing its pid to a file
		files  []string
	}{
		{"child", "sleep 60 & echo $! > a; wait", []string{"a"}},
		{"grandchild", "sh -c 'sleep 60 & echo $! > a; wait' & echo $! > b; wait", []string{"a", "b"}},
		{"new session without the marker", "setsid env -i sleep 60 & echo $! > a; wait", []string{"a"}},
		{"new group", "set -m; sleep 60 & echo $! > a; wait", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sh := exec.Command("sh", "-c", tc.script)
			sh.Dir = dir
			if err := sh.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = sh.Wait(); close(exited) }()
			var want []int
			for _, f := range tc.files {
				waitFile(t, filepath.Join(dir, f))
				want = append(want, readPID(t, filepath.Join(dir, f)))
			}
			got := descendants(sh.Process.Pid)
			for _, pid := range want {
				if !slices.Contains(got, pid) {
					t.Errorf("descendants(%d) = %v, want %d among them", sh.Process.Pid, got, pid)
				}
			}
			for _, pid := range got {
				if pid == sh.Process.Pid || pid == os.Getpid() {
					t.Errorf("descendants(%d) lists %d, not below it", sh.Process.Pid, pid)
				}
			}
			for _, pid := range append(want, sh.Process.Pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			<-exited
		})
	}
	if got := descendants(os.Getpid()); slices.Contains(got, os.Getppid()) {
		t.Errorf("descendants of this process list its parent %d", os.Getppid())
	}
}

// The reaper gives the agent the shell's own status: its exit code, or
// the signal that killed it.
func TestReaperKeepsTheShellsStatus(t *testing.T) {
	for _, tc := range []struct {
		command string
		code    int
		signal  string
	}{
		{"exit 0", 0, ""},
		{"exit 7", 7, ""},
		{"kill -TERM $$", -1, syscall.SIGTERM.String()},
		{"kill -KILL $$", -1, syscall.SIGKILL.String()},
	} {
		t.Run(tc.command, func(t *testing.T) {
			res, err := Commands{}.Run(context.Background(), workspace.Command{Command: tc.command, Cwd: t.TempDir(), Timeout: time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.signal != "" && res.Signal != tc.signal:
				t.Errorf("signal %q (exit %v), want %q", res.Signal, res.ExitCode, tc.signal)
			case tc.signal == "" && (res.ExitCode == nil || *res.ExitCode != tc.code):
				t.Errorf("exit %v (signal %q), want %d", res.ExitCode, res.Signal, tc.code)
			}
		})
	}
}

// carries tells a marked process, an unmarked one, and a live user
// process without any environment (as one in the middle of an exec shows
// itself, which makes the sweep look twice) from kernel threads and
// zombies, which have none either and must not.
func TestCarriesTellsProcessesWithoutEnvironment(t *testing.T) {
	marker := NewMarker()
	start := func(env []string) *exec.Cmd {
		c := exec.Command("sleep", "30")
		c.Env = env
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	withMarker := start(append(os.Environ(), marker))
	plain := start(os.Environ())
	bare := start([]string{})
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s, _ := procState(strconv.Itoa(zombie.Process.Pid)); s == "Z" {
			break
		}
	}
	// Each started process's environment shows once its exec landed.
	for _, c := range []*exec.Cmd{withMarker, plain} {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.Process.Pid), "cmdline")); strings.HasPrefix(string(b), "sleep") {
				break
			}
		}
	}
	want := markerSet([]string{marker})
	for _, tc := range []struct {
		name string
		pid  int
		want int
	}{
		{"marked", withMarker.Process.Pid, marked},
		{"unmarked", plain.Process.Pid, unmarked},
		{"no environment", bare.Process.Pid, noEnvironment},
		{"zombie", zombie.Process.Pid, unmarked},
		{"kernel thread", 2, unmarked},
		{"gone", 1 << 30, unmarked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no environment" {
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(tc.pid), "cmdline")); strings.HasPrefix(string(b), "sleep") {
						break
					}
				}
			}
			if got := carries(strconv.Itoa(tc.pid), want); got != tc.want {
				t.Errorf("carries = %d, want %d", got, tc.want)
			}
		})
	}
}
