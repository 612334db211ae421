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
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
	"github.com/acp-agent/acp-agent/internal/proctest"
)

const helperCgroupAgentEnv = "LOCAL_TEST_HELPER_CGROUP_AGENT_DIR"

// needCgroup skips the test where a command cannot have a cgroup of its
// own: no cgroup v2, or this process's cgroup directory not writable.
func needCgroup(t *testing.T) {
	t.Helper()
	probe := reaper.CgroupPath(NewMarker())
	if probe == "" {
		t.Skip("no cgroup v2 mount (fstype cgroup2 in /proc/self/mountinfo): commands get no cgroup")
	}
	if err := os.Mkdir(probe, 0o755); err != nil {
		t.Skipf("this process's cgroup v2 directory is not writable (%v): commands get no cgroup", err)
	}
	if err := syscall.Rmdir(probe); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// A command's `setsid env -i sleep` (no marker, its own session) is in
// the command's cgroup while the command runs, and gone with the cgroup
// once the command ends, is cancelled or times out.
func TestCommandCgroupHoldsEscapees(t *testing.T) {
	needCgroup(t)
	for _, how := range []string{"ends", "cancelled"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			marker := NewMarker()
			cg := reaper.CgroupPath(marker)
			pidFile := filepath.Join(dir, "c.pid")
			script := "setsid env -i sleep 1000 & echo $! > " + pidFile + "; " +
				"grep -qx $! " + filepath.Join(cg, "cgroup.procs") + " && echo in-cgroup; " +
				"grep '^0::' /proc/$!/cgroup"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if how == "cancelled" {
				script += "; echo ready > " + filepath.Join(dir, "ready") + "; sleep 60"
				go func() {
					waitFile(t, filepath.Join(dir, "ready"))
					cancel()
				}()
			}
			res, err := Commands{KillGrace: 200 * time.Millisecond}.Run(ctx, workspace.Command{Command: script, Cwd: dir, Marker: marker, Timeout: time.Minute}, nil)
			if how == "ends" && err != nil {
				t.Fatal(err)
			}
			pid := readPID(t, pidFile)
			if !proctest.Gone(pid) {
				t.Errorf("the escapee %d survived the command", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if !strings.Contains(res.Output, "in-cgroup") || !strings.Contains(res.Output, "/"+reaper.CgroupName(marker)+"\n") {
				t.Errorf("the escapee was not in the command's cgroup %s while it ran: output %q", cg, res.Output)
			}
			if exists(cg) {
				t.Errorf("the command's cgroup %s is left after it ended", cg)
				reaper.KillCgroup(cg, time.Second)
			}
		})
	}
}

// helperCgroupAgent runs, with the registry under dir, a command that
// starts a `setsid env -i sleep` and then sleeps, and waits to be killed.
func helperCgroupAgent(dir string) {
	r, err := OpenRunning(filepath.Join(dir, "running"))
	if err != nil {
		os.Exit(2)
	}
	marker := NewMarker()
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(marker), 0o600); err != nil {
		os.Exit(2)
	}
	pid := filepath.Join(dir, "c.pid")
	script := "setsid env -i sleep 1000 & echo $! > " + pid + ".tmp; mv " + pid + ".tmp " + pid + "; " +
		"echo $$ > " + filepath.Join(dir, "sh.tmp") + "; mv " + filepath.Join(dir, "sh.tmp") + " " + filepath.Join(dir, "sh") + "; sleep 1000"
	_, _ = Commands{Running: r}.Run(context.Background(), workspace.Command{Command: script, Cwd: dir, Marker: marker, Timeout: time.Hour}, nil)
	os.Exit(3) // never reached in the test: the agent is killed first
}

// The agent and the command's reaper are both killed outright (the agent
// stopped first, so it cannot clean up): the command's `setsid env -i
// sleep` (no marker, not in the group, re-parented to init) survives
// them, and the next start's sweep kills it through the recorded cgroup
// and removes the cgroup.
func TestSweepRunningKillsRecordedCgroup(t *testing.T) {
	needCgroup(t)
	dir := t.TempDir()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), helperCgroupAgentEnv+"="+dir)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan struct{})
	go func() { _ = agent.Wait(); close(agentDone) }()
	t.Cleanup(func() { _ = agent.Process.Kill(); <-agentDone })
	waitFile(t, filepath.Join(dir, "sh"))
	waitFile(t, filepath.Join(dir, "c.pid"))
	escapee := readPID(t, filepath.Join(dir, "c.pid"))
	t.Cleanup(func() { _ = syscall.Kill(escapee, syscall.SIGKILL) })
	b, err := os.ReadFile(filepath.Join(dir, "marker"))
	if err != nil {
		t.Fatal(err)
	}
	cg := reaper.CgroupPath(string(b))
	t.Cleanup(func() { reaper.KillCgroup(cg, time.Second) }) // when the sweep failed
	// The shell's parent: the command's own reaper, or the agent's reaper
	// server.
	reaperPID, ok := proctest.ParentOf(readPID(t, filepath.Join(dir, "sh")))
	if !ok || reaperPID == agent.Process.Pid {
		t.Fatal("the command's shell is not running under a reaper")
	}

	_ = agent.Process.Signal(syscall.SIGSTOP)
	if err := syscall.Kill(reaperPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = agent.Process.Kill()
	<-agentDone
	if proctest.Gone(escapee) {
		t.Fatal("the escapee died with the agent and the reaper: nothing is left for the sweep to prove")
	}
	if !exists(cg) {
		t.Fatalf("the command's cgroup %s is gone before the sweep", cg)
	}

	killed, err := SweepRunning(filepath.Join(dir, "running"))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !proctest.Gone(escapee); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the escapee still runs after the sweep")
		}
	}
	if killed < 1 {
		t.Errorf("killed %d, want at least the escapee", killed)
	}
	if exists(cg) {
		t.Errorf("the recorded cgroup %s is left after the sweep", cg)
	}
}

// A recorded cgroup path is acted on only when it is a command's cgroup
// for the record's marker below the cgroup v2 mount: the registry is on
// disk, not trusted.
func TestRecordedCgroupValidated(t *testing.T) {
	marker := NewMarker()
	cg := reaper.CgroupPath(marker)
	if cg == "" {
		t.Skip("no cgroup v2 mount: no cgroup is ever recorded")
	}
	other := reaper.CgroupPath(NewMarker())
	for _, tc := range []struct {
		name, path string
		want       bool
	}{
		{"the command's own", cg, true},
		{"another marker's", other, false},
		{"not clean", filepath.Dir(cg) + "/./" + filepath.Base(cg), false},
		{"dot-dot out of the mount", filepath.Dir(cg) + "/../../../tmp/" + filepath.Base(cg), false},
		{"outside the mount", "/tmp/" + filepath.Base(cg), false},
		{"relative", filepath.Base(cg), false},
		{"the parent", filepath.Dir(cg), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reaper.ValidCgroup(tc.path, marker); got != tc.want {
				t.Errorf("ValidCgroup(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
	if reaper.ValidCgroup(cg, "ACP_X=../../etc") {
		t.Error("a marker that is not hex names a cgroup")
	}
}
