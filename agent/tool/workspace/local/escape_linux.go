package local

// This file keeps a command's processes from outliving it on Linux. The
// command runs under a reaper (package reaper), a subreaper that kills
// and reaps every descendant when the command ends or the agent dies.
// Behind it, for a reaper that was itself killed: every process of a
// command carries a marker in its environment (inherited through fork
// and setsid, lost to `env -i`), so the processes that left the group
// are found in /proc and killed when the command ends, and the leader
// has Pdeathsig when there is no reaper.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/reaper"
)

// sysProcAttr puts the command in its own process group and kills the
// leader when the agent's thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// markedPIDs lists the live processes (other than this one) whose
// environment holds marker ("NAME=value"), reading /proc. Processes of
// other users cannot be read and are not listed (they cannot be ours).
func markedPIDs(markers ...string) []int {
	pids, _ := leftPIDs(markerSet(markers), nil, nil)
	return pids
}

func markerSet(markers []string) map[string]bool {
	want := make(map[string]bool, len(markers))
	for _, m := range markers {
		want[m] = true
	}
	return want
}

// leftPIDs lists the live processes (other than this one) that carry one
// of the markers in want, or belong to a process group of groups (pgid →
// start time of its leader) that is known to be the one recorded:
// its leader has the recorded start time, or a member carries a marker
// (known[pgid], kept across calls). A group whose leader is gone and
// whose members carry no marker is left alone: its id may be another's.
// unsure counts the live user processes that showed no environment at
// all: in the middle of an exec, or started without one.
func leftPIDs(want map[string]bool, groups map[int]string, known map[int]bool) (out []int, unsure int) {
	entries, err := os.ReadDir("/proc")
	if err != nil || len(want)+len(groups) == 0 {
		return nil, 0
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		pg := -1
		if len(groups) > 0 {
			// The stat only where a group may match: a sweep by marker
			// alone reads environ, which a zombie no longer has.
			f, ok := procStat(e.Name())
			if !ok || f[0] == "Z" || f[0] == "X" {
				continue
			}
			if len(f) > 19 {
				if g, err := strconv.Atoi(f[2]); err == nil {
					if start, rec := groups[g]; rec {
						pg = g
						if pid == g && f[19] == start {
							known[g] = true
						}
					}
				}
			}
		}
		if pg >= 0 && known[pg] {
			out = append(out, pid)
			continue
		}
		switch carries(e.Name(), want) {
		case marked:
			out = append(out, pid)
			if pg >= 0 {
				known[pg] = true
			}
		case noEnvironment:
			unsure++
		}
	}
	return out, unsure
}

// What carries finds in a process's environment.
const (
	unmarked      = iota
	marked        // one of the markers
	noEnvironment // none at all, in a live process that is not the kernel's
)

// pfKthread is PF_KTHREAD in the flags of /proc/<pid>/stat.
const pfKthread = 0x00200000

// carries reports whether the environment of /proc/<pid> holds one of
// want, or whether a live user process showed none.
func carries(pid string, want map[string]bool) int {
	if len(want) == 0 {
		return unmarked
	}
	env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.ESRCH) {
		return unmarked // gone, or another user's (not ours)
	}
	if err != nil || len(env) == 0 {
		// Kernel threads and zombies have none; anything else may be
		// in the middle of an exec.
		f, ok := procStat(pid)
		if !ok || f[0] == "Z" || f[0] == "X" || len(f) < 7 {
			return unmarked
		}
		if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfKthread != 0 {
			return unmarked
		}
		return noEnvironment
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if want[string(kv)] {
			return marked
		}
	}
	return unmarked
}

// sweepMarked kills every live process that carries marker, repeating
// until none is left (a process may fork while it is being killed) or
// bound passes. It returns how many distinct processes it killed.
func sweepMarked(bound time.Duration, markers ...string) int { return sweepLeft(bound, nil, markers) }

// sweepLeft kills what leftPIDs finds, and each known group as a whole
// (kill(-pgid): a member in the middle of an exec shows no environment),
// repeating until none is left or bound passes. A process in the middle
// of an exec shows no environment for a moment, so an empty scan ends
// the sweep only when every live user process showed one; otherwise it
// ends after two empty scans in a row. What a scan
// finds is killed even when bound has passed. It returns how many
// distinct processes it killed (a killed process may still be listed
// until the kill lands).
func sweepLeft(bound time.Duration, groups map[int]string, markers []string) int {
	want := markerSet(markers)
	known := map[int]bool{}
	killed := map[int]bool{}
	deadline := time.Now().Add(bound)
	empty := 0
	for {
		pids, unsure := leftPIDs(want, groups, known)
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		for pg := range known {
			_ = syscall.Kill(-pg, syscall.SIGKILL)
		}
		if len(pids) == 0 {
			empty++
		} else {
			empty = 0
		}
		// One empty scan is enough when every live process showed its
		// environment: nothing marked was in the middle of an exec.
		if empty >= 2 || empty == 1 && unsure == 0 || time.Now().After(deadline) {
			return len(killed)
		}
		time.Sleep(5 * time.Millisecond) // let the kills land before looking again
	}
}

// KillMarked kills every process that carries one of markers: the
// processes of commands left by an agent that died (the marker is
// recorded in the session log before the command starts). /proc is read
// once per round whatever the number of markers. It returns how many
// processes it killed.
func KillMarked(markers ...string) int { return sweepMarked(2*time.Second, markers...) }

// commandReaper is the agent's end of a command's reaper (package reaper).
type commandReaper struct {
	agent  *os.File   // held while the command runs: EOF tells the reaper the agent died
	status *os.File   // the reaper writes reaperClean here once it has reaped everything
	child  []*os.File // the reaper's ends, closed here once it started
}

// useReaper makes ec run under a reaper (this executable again, as the
// group leader in ec's place). It returns nil, leaving ec as it is, when
// it cannot: Pdeathsig and the sweeps then remain.
func useReaper(ec *exec.Cmd, marker string, grace time.Duration) *commandReaper {
	if ec.Err != nil || ec.Path == "" || len(ec.ExtraFiles) > 0 {
		return nil
	}
	ar, aw, err := os.Pipe()
	if err != nil {
		return nil
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		ar.Close()
		aw.Close()
		return nil
	}
	ec.Args = reaper.Args(marker, grace, ec.Path, ec.Args)
	ec.Path = "/proc/self/exe"         // this executable, even once replaced on disk
	ec.ExtraFiles = []*os.File{ar, sw} // fds 3 and 4
	if ec.SysProcAttr != nil {
		// The reaper outlives the agent long enough to kill everything
		// (it sees the pipe's EOF); Pdeathsig would kill it first.
		ec.SysProcAttr.Pdeathsig = 0
	}
	return &commandReaper{agent: aw, status: sr, child: []*os.File{ar, sw}}
}

// started closes the reaper's ends in the agent once Start returned.
func (r *commandReaper) started() {
	if r == nil {
		return
	}
	for _, f := range r.child {
		f.Close()
	}
	r.child = nil
}

// finish reports, once the reaper was waited for, whether it reaped every
// descendant of the command; it closes the pipes.
func (r *commandReaper) finish() bool {
	if r == nil {
		return false
	}
	r.started()
	r.agent.Close()
	b := make([]byte, len(reaper.Clean))
	n, _ := io.ReadFull(r.status, b)
	r.status.Close()
	return string(b[:n]) == reaper.Clean
}

// descendants lists the processes below root (reaper.Descendants).
func descendants(root int) []int { return reaper.Descendants(root) }

// procStat reads the fields of /proc/<pid>/stat after the parenthesised
// command (reaper.Stat).
func procStat(pid string) ([]string, bool) { return reaper.Stat(pid) }

// procState reads the state letter of /proc/<pid>/stat.
func procState(pid string) (string, bool) {
	f, ok := procStat(pid)
	if !ok {
		return "", false
	}
	return f[0], true
}

// killCgroup kills what is left in the command's cgroup and removes it,
// when the reaper did not (it was killed before it could): processes
// that escaped its tree carry the cgroup even without the marker.
func killCgroup(marker string, grace time.Duration) {
	if cg := reaper.CgroupPath(marker); cg != "" {
		reaper.KillCgroup(cg, grace)
	}
}
