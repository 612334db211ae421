package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

// startMarked starts `setsid sleep 60` carrying marker, and returns a
// channel closed when it has exited.
func startMarked(t *testing.T, marker string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("setsid", "sleep", "60")
	cmd.Env = append(os.Environ(), marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	waitExeced(t, cmd.Process.Pid, "sleep", marker)
	return cmd, exited
}

// waitExeced waits (bounded) for the event a sweep needs: pid has become
// comm with marker in its environment. In the middle of an exec (setsid
// becoming sleep) /proc shows no environment.
func waitExeced(t *testing.T, pid int, comm, marker string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if strings.TrimSpace(string(c)) == comm && (marker == "" || strings.Contains(string(env), marker)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never became %s", pid, comm)
		}
	}
}

// TestSweepRunningKillsRecordedGroups: a dead agent's recorded process
// group is killed whole, members without the marker too (`env -i`),
// while the group is still the one recorded; a record whose group id
// now names another group (its leader started at another time, no member
// carries the marker) is left alone.
func TestSweepRunningKillsRecordedGroups(t *testing.T) {
	root := filepath.Join(t.TempDir(), "running")
	dead, err := OpenRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	start := func(marker string) (*exec.Cmd, int, chan struct{}) {
		dir := t.TempDir()
		// The leader carries the marker (as the reaper does); its child
		// in the group does not.
		cmd := exec.Command("sh", "-c", "env -i sleep 60 & echo $! > "+filepath.Join(dir, "pid")+"; wait")
		cmd.Env = append(os.Environ(), marker)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		waitFile(t, filepath.Join(dir, "pid"))
		bare := readPID(t, filepath.Join(dir, "pid"))
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
		waitExeced(t, bare, "sleep", "")
		return cmd, bare, exited
	}
	mDead := NewMarker()
	rec, err := dead.Add(mDead)
	if err != nil {
		t.Fatal(err)
	}
	leader, bare, _ := start(mDead)
	rec.SetGroup(leader.Process.Pid)

	// Another group recorded under a marker nothing carries, with a
	// start time that is not its leader's.
	other, otherBare, _ := start(NewMarker())
	if err := writeRecord(filepath.Join(dead.dir, "99"), NewMarker()+"\n"+strconv.Itoa(other.Process.Pid)+" 1", os.O_EXCL); err != nil {
		t.Fatal(err)
	}
	dead.lock.Close() // the agent dies

	killed, err := SweepRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !proctest.Gone(bare) || !proctest.Gone(leader.Process.Pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the recorded group still runs after the sweep (leader gone %v, bare member gone %v)", proctest.Gone(leader.Process.Pid), proctest.Gone(bare))
		}
	}
	if killed < 2 {
		t.Errorf("killed %d, want the leader and its bare child", killed)
	}
	if proctest.Gone(other.Process.Pid) || proctest.Gone(otherBare) {
		t.Error("a group whose id was recorded with another start time was killed")
	}
}

// TestSweepRunningKillsOnlyWhatDeadAgentsLeft: the markers recorded by an
// agent that is gone (its lock is free) are killed and their records
// removed; those of a live agent sharing the registry are left alone.
func TestSweepRunningKillsOnlyWhatDeadAgentsLeft(t *testing.T) {
	root := filepath.Join(t.TempDir(), "running")
	dead, err := OpenRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	mDead := NewMarker()
	if _, err := dead.Add(mDead); err != nil {
		t.Fatal(err)
	}
	_, deadExited := startMarked(t, mDead)
	dead.lock.Close() // the agent dies: its lock goes, its records stay

	live, err := OpenRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	mLive := NewMarker()
	removeLive, err := live.Add(mLive)
	if err != nil {
		t.Fatal(err)
	}
	liveCmd, _ := startMarked(t, mLive)

	killed, err := SweepRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Errorf("killed %d processes, want 1", killed)
	}
	select {
	case <-deadExited:
	case <-time.After(10 * time.Second):
		t.Fatal("the dead agent's command still runs after the sweep")
	}
	if pids := markedPIDs(mLive); len(pids) != 1 || pids[0] != liveCmd.Process.Pid {
		t.Errorf("the live agent's command: %v, want it running", pids)
	}
	for _, p := range []string{dead.dir, dead.lockPath} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the sweep: %v", p, err)
		}
	}
	if m, _ := readMarkers(live.dir); len(m) != 1 || m[0] != mLive {
		t.Errorf("live records = %v", m)
	}
	if n, err := SweepRunning(root); n != 0 || err != nil {
		t.Errorf("second sweep killed %d (%v)", n, err)
	}
	removeLive.Remove()
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("registry after the live agent closed: %v", entries)
	}
}

// TestCommandRecordedWhileItRuns: the command's marker is in the registry
// before the command starts (the command itself reads it) and gone when
// Run returns.
func TestCommandRecordedWhileItRuns(t *testing.T) {
	root := filepath.Join(t.TempDir(), "running")
	r, err := OpenRunning(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	marker := NewMarker()
	res, err := (Commands{Running: r}).Run(context.Background(), workspace.Command{Command: "cat " + r.dir + "/*", Cwd: t.TempDir(), Marker: marker, Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, marker) {
		t.Errorf("the command saw %q, want its marker %s recorded", res.Output, marker)
	}
	if m, _ := readMarkers(r.dir); len(m) != 0 {
		t.Errorf("records after the command ended: %v", m)
	}
}

// BenchmarkSweepRunningEmpty is the cost added to every agent start when
// no agent died: one read of the registry.
func BenchmarkSweepRunningEmpty(b *testing.B) {
	root := filepath.Join(b.TempDir(), "running")
	r, err := OpenRunning(root)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := SweepRunning(root); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommandsRunTrueRecorded is BenchmarkCommandsRunTrue with the
// registry: what recording the marker (one small file written, then
// removed) adds to each command.
func BenchmarkCommandsRunTrueRecorded(b *testing.B) {
	dir := b.TempDir()
	r, err := OpenRunning(filepath.Join(dir, "running"))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := (Commands{Running: r}).Run(context.Background(), workspace.Command{Command: "true", Cwd: dir, Timeout: time.Minute}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
