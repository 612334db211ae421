package local

// This file keeps a command's processes from outliving it on Linux: every
// process of a command carries a marker in its environment (inherited
// through fork and setsid alike), so the processes that left the group
// are found in /proc and killed when the command ends; and a watchdog
// process kills the group and every marked process when the agent dies
// (its pipe from the agent reaches EOF), which Pdeathsig alone cannot do
// beyond the leader.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
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
	entries, err := os.ReadDir("/proc")
	if err != nil || len(markers) == 0 {
		return nil
	}
	want := make(map[string]bool, len(markers))
	for _, m := range markers {
		want[m] = true
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if want[string(kv)] {
				if state, ok := procState(e.Name()); ok && state != "Z" && state != "X" {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// sweepMarked kills every live process that carries marker, repeating
// until none is left (a process may fork while it is being killed) or
// bound passes. One empty scan is not enough: a process in the middle of
// an exec shows no environment for a moment, so the sweep ends after two
// empty scans in a row. It returns how many distinct processes it killed
// (a killed process may still be listed until the kill lands).
func sweepMarked(bound time.Duration, markers ...string) int {
	killed := map[int]bool{}
	deadline := time.Now().Add(bound)
	empty := 0
	for {
		pids := markedPIDs(markers...)
		if len(pids) == 0 {
			empty++
		} else {
			empty = 0
		}
		if empty >= 2 || time.Now().After(deadline) {
			return len(killed)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
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

// watchdogScript runs in its own process group, with the marker as $1.
// It reads the command's group id, then waits: "done" means the command
// was stopped by the agent; EOF means the agent died, and the group and
// every marked process are killed.
const watchdogScript = `read -r pg; read -r st
[ "$st" = done ] && exit 0
[ -n "$pg" ] && kill -KILL -- "-$pg" 2>/dev/null
for d in /proc/[0-9]*; do
  while IFS= read -r -d '' kv; do
    if [ "$kv" = "$1" ]; then kill -KILL "${d#/proc/}" 2>/dev/null; break; fi
  done < "$d/environ" 2>/dev/null
done
exit 0`

// watchdog is a started watchdog process.
type watchdog struct {
	cmd     *exec.Cmd
	w       *os.File
	watched bool
}

// startWatchdog starts the watchdog of marker with shell; a failure to
// start it is not fatal (Pdeathsig and the sweep at restart remain).
func startWatchdog(shell, marker string, env []string) *watchdog {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	cmd := exec.Command(shell, "-c", watchdogScript, "acp-agent-watchdog", marker)
	cmd.Stdin = r
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil
	}
	return &watchdog{cmd: cmd, w: w}
}

// watch tells the watchdog the command's group.
func (d *watchdog) watch(pgid int) {
	if d != nil {
		_, _ = d.w.WriteString(strconv.Itoa(pgid) + "\n")
		d.watched = true
	}
}

// dismiss tells the watchdog the command is over and reaps it.
func (d *watchdog) dismiss() {
	if d == nil {
		return
	}
	if !d.watched {
		_, _ = d.w.WriteString("\n")
	}
	_, _ = d.w.WriteString("done\n")
	d.w.Close()
	_ = d.cmd.Wait()
}

// procState reads the state letter of /proc/<pid>/stat.
func procState(pid string) (string, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 1 {
		return "", false
	}
	return string(f[0]), true
}
