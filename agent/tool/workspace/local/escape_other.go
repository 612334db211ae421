//go:build !linux

package local

import (
	"os/exec"
	"syscall"
	"time"
)

// Without /proc and Pdeathsig, a command is stopped through its process
// group only: processes that left it (setsid) are not found.

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func sweepMarked(time.Duration, ...string) int { return 0 }

// KillMarked does nothing where processes cannot be found by marker.
func KillMarked(...string) int { return 0 }

// reaper: there is no subreaper to run a command under.
type reaper struct{}

func useReaper(*exec.Cmd, string, time.Duration) *reaper { return nil }
func (*reaper) started()                                 {}
func (*reaper) finish() bool                             { return false }

// killCgroup: there are no cgroups to kill.
func killCgroup(string, time.Duration) {}
