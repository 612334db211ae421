//go:build !linux

package gitrun

import (
	"os/exec"
	"syscall"
	"time"
)

// Group makes cmd run in a process group of its own that ends with it:
// when cmd's context ends (an interrupt, a cancel, SIGTERM's shutdown) the
// whole group is killed at once, so a checkout's helper processes
// (parallel checkout workers, say) stop too and Wait does not wait on
// pipes they hold past WaitDelay; and when the agent itself dies (kill
// -9), Linux kills git too (Pdeathsig); elsewhere git may finish alone.
func Group(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	// Only a process outside the group can hold git's pipes after the
	// group is gone; the delay must not be shorter than a loaded machine
	// takes to copy out what git wrote before it exited (Wait would cut
	// the output and fail with ErrWaitDelay).
	cmd.WaitDelay = 2 * time.Second
}
