package local

// This file runs a long-lived process the agent talks to (an external ACP
// agent, package driver/external) under the same reaper, marker, running
// registry and stop sequence as a command: its whole process tree is
// killed when it is stopped, when the agent exits, and by the next agent
// when this one died.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Supervised is a process started by StartSupervised.
type Supervised struct {
	cmd    *exec.Cmd
	rp     interface{ finish() bool }
	rec    *RunningEntry
	marker string
	grace  time.Duration

	done chan struct{}
	err  error // the process's exit, once done is closed

	stopOnce sync.Once
}

// StartSupervised starts ec (its Path, Args, Dir, Env, Stdin, Stdout and
// Stderr set by the caller; Stdin and Stdout should be *os.File so that
// no copying goroutine outlives the process) in a process group of its
// own under the reaper, with a fresh marker recorded in running (nil: not
// recorded). grace is the time between SIGTERM and SIGKILL (0:
// DefaultKillGrace).
func StartSupervised(ec *exec.Cmd, running *Running, grace time.Duration) (*Supervised, error) {
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	if ec.Env == nil {
		ec.Env = os.Environ()
	}
	marker := NewMarker()
	ec.Env = append(ec.Env[:len(ec.Env):len(ec.Env)], marker)
	ec.SysProcAttr = sysProcAttr()
	s := &Supervised{cmd: ec, marker: marker, grace: grace, done: make(chan struct{})}
	if running != nil {
		rec, err := running.Add(marker)
		if err != nil {
			return nil, fmt.Errorf("record process: %w", err)
		}
		s.rec = rec
	}
	rp := useReaper(ec, marker, grace)
	err := ec.Start()
	rp.started()
	if err != nil {
		rp.finish()
		if s.rec != nil {
			s.rec.Remove()
		}
		return nil, err
	}
	s.rp = rp
	if s.rec != nil {
		s.rec.SetGroup(ec.Process.Pid)
	}
	go func() {
		err := ec.Wait()
		s.err = err
		close(s.done)
	}()
	return s, nil
}

// Pid is the process group's id.
func (s *Supervised) Pid() int { return s.cmd.Process.Pid }

// Done is closed once the process (the reaper, when there is one) has
// exited; Err then says how.
func (s *Supervised) Done() <-chan struct{} { return s.done }

// Err is how the process exited (nil for status 0); valid after Done.
func (s *Supervised) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Stop ends the process and everything it started: SIGTERM to its group
// (the reaper passes it on, then kills what is left after the grace),
// SIGKILL when it does not end, then a sweep of what carries its marker.
// It returns once nothing of it is left; it is idempotent.
func (s *Supervised) Stop() {
	s.stopOnce.Do(func() {
		pgid := s.cmd.Process.Pid
		select {
		case <-s.done:
		default:
			stopGroup(pgid, 2*s.grace+time.Second, s.done)
		}
		<-s.done
		if !s.rp.finish() {
			stopGroup(pgid, s.grace, nil)
			sweepMarked(s.grace, s.marker)
			killCgroup(s.marker, s.grace)
		}
		if s.rec != nil {
			s.rec.Remove()
		}
	})
}

// ExitDescription says how a process that ended exited: "exit status 2",
// "killed by signal killed", "exited normally".
func ExitDescription(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err != nil {
		return err.Error()
	}
	return "exited with status 0"
}
