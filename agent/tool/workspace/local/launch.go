package local

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// launched is a started command, whichever way it was started: by the
// reaper server (servedProc) or as a child of the agent under a reaper of
// its own (reapedProc).
type launched interface {
	// pid is the shell's pid, the leader of its process group.
	pid() int
	// done is closed once the command ended.
	done() <-chan struct{}
	// stop ends the command (SIGTERM, SIGKILL after the grace) and
	// returns once it ended or the bound of its stop passed.
	stop()
	// finish returns the shell's wait status, and whether everything
	// the command started is known to be gone (clean); called after done
	// or stop.
	finish() (ws syscall.WaitStatus, clean bool)
}

// launch starts ec (the command, as the sandbox wrapped it) with out as
// its stdout and stderr, by the registry's reaper server where it can,
// else under a reaper of its own; it fails with ctx's error when ctx ends
// before the server confirmed the start.
func (c Commands) launch(ctx context.Context, ec *exec.Cmd, marker string, grace time.Duration, out *os.File) (launched, error) {
	if p, ok, err := serveCommand(ctx, c.Running, ec, marker, grace, out); ok {
		return p, err
	}
	ec.Stdout, ec.Stderr = out, out // *os.File: exec starts no copying goroutine
	return startReaped(ec, marker, grace)
}

// reapedProc is a command started as the agent's child, under a reaper of
// its own where there is one (useReaper).
type reapedProc struct {
	ec     *exec.Cmd
	rp     *commandReaper
	grace  time.Duration
	exited chan struct{} // closed once ec was waited for
}

func startReaped(ec *exec.Cmd, marker string, grace time.Duration) (*reapedProc, error) {
	rp := useReaper(ec, marker, grace)
	err := ec.Start()
	rp.started()
	if err != nil {
		rp.finish()
		return nil, err
	}
	p := &reapedProc{ec: ec, rp: rp, grace: grace, exited: make(chan struct{})}
	go func() {
		_ = ec.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *reapedProc) pid() int              { return p.ec.Process.Pid }
func (p *reapedProc) done() <-chan struct{} { return p.exited }

func (p *reapedProc) stop() {
	bound := p.grace
	if p.rp != nil {
		// The reaper takes its grace for what the shell left, then
		// kills; it is killed itself only if it does not end.
		bound = 2*p.grace + time.Second
	}
	stopGroup(p.pid(), bound, p.exited)
}

func (p *reapedProc) finish() (syscall.WaitStatus, bool) {
	<-p.exited
	ws, _ := p.ec.ProcessState.Sys().(syscall.WaitStatus)
	return ws, p.rp.finish()
}
