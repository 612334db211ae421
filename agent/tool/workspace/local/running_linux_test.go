package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
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
	for deadline := time.Now().Add(10 * time.Second); len(markedPIDs(marker)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the marked process never showed up in /proc")
		}
	}
	return cmd, exited
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
