package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

const helperAgentEnv = "LOCAL_TEST_HELPER_AGENT_DIR"

// escapeeScript starts, in dir, a process that leaves the command's
// process group and session (setsid, with and without a fork) and writes
// their pids.
func escapeeScript(dir string) string {
	return "setsid sleep 60 & echo $! > " + filepath.Join(dir, "a.pid") + "; " +
		"setsid -f sh -c 'echo $$ > " + filepath.Join(dir, "b.pid.tmp") + "; mv " + filepath.Join(dir, "b.pid.tmp") + " " +
		filepath.Join(dir, "b.pid") + "; exec sleep 60'; " +
		"while [ ! -s " + filepath.Join(dir, "b.pid") + " ]; do sleep 0.01; done; "
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
				timeout = 500 * time.Millisecond
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
			for _, f := range []string{"a.pid", "b.pid"} {
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
	_, _ = Commands{}.Run(context.Background(), workspace.Command{Command: script, Cwd: dir, Timeout: time.Minute}, nil)
	os.Exit(3) // never reached in the test: the agent is killed first
}

// The agent is SIGKILLed while `sleep 30` runs: nothing of the command's
// group, nor its setsid escapees, is left.
func TestAgentKilledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), helperAgentEnv+"="+dir)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "pg"))
	pgid := readPID(t, filepath.Join(dir, "pg"))
	escapees := []int{readPID(t, filepath.Join(dir, "a.pid")), readPID(t, filepath.Join(dir, "b.pid"))}
	if live, _ := proctest.LiveGroupMembers(pgid); len(live) == 0 {
		t.Fatal("the command's group is not running")
	}
	killed := time.Now()
	_ = agent.Process.Kill()
	_ = agent.Wait()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left, _ = proctest.LiveGroupMembers(pgid)
		for _, pid := range escapees {
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
