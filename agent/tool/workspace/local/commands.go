package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// Defaults of Commands.
const (
	DefaultKillGrace   = 2 * time.Second
	DefaultOutputLimit = 64 << 10
	// drainGrace bounds the wait for output after the process group is
	// gone: a process that escaped the group (setsid) may still hold the
	// pipe, and must not keep Run from returning.
	drainGrace = 500 * time.Millisecond
)

// MarkerVar is the environment variable that marks every process of one
// command (workspace.MarkerVar).
const MarkerVar = workspace.MarkerVar

// NewMarker returns a fresh "ACP_AGENT_COMMAND=<random>" entry.
func NewMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return MarkerVar + "=" + hex.EncodeToString(b[:])
}

// errTimedOut is the cancellation cause of a command's own timeout.
var errTimedOut = errors.New("command timed out")

// Commands runs commands with `bash -c` on this machine.
type Commands struct {
	// Shell is the shell binary; "" means "bash".
	Shell string
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
	// Env is the environment of commands; nil means this process's.
	Env []string
	// Sandbox, when set, runs commands under it unless a command asks to
	// be unsandboxed; a command it cannot sandbox is refused
	// (sandbox.CodeUnavailable), never run unsandboxed.
	Sandbox *sandbox.Sandbox
	// Running, when set, records each command's marker before it
	// starts and drops it when the command ends, so the next agent to
	// start kills what is left if this one dies (SweepRunning).
	Running *Running
}

var (
	_ workspace.Commands  = Commands{}
	_ workspace.Sandboxed = Commands{}
)

// KeepsProtected reports whether sandboxed commands in cwd see the
// protected paths read-only.
func (c Commands) KeepsProtected(cwd string) bool {
	return c.Sandbox != nil && c.Sandbox.KeepsProtected(cwd)
}

// DescribeSandbox describes the sandbox of commands in cwd, or "" without one.
func (c Commands) DescribeSandbox(cwd string) string {
	if c.Sandbox == nil {
		return ""
	}
	return c.Sandbox.Describe(cwd)
}

// Run runs cmd in its own process group with stdin from /dev/null and
// stdout and stderr merged. When ctx ends or cmd.Timeout passes, the whole
// group gets SIGTERM, then SIGKILL after the grace. Processes the command
// left running are stopped the same way when it exits: on Linux every
// descendant, whatever group or session it moved to (the reaper), elsewhere
// its group. Run
// returns after the shell is reaped and its output goroutine has ended;
// display is not called (a local command has no terminal to embed).
// It is long because its steps are ordered by the guarantees they give and
// read best in that order: the write-ahead record before the start, the
// reaper wrapped last around what the sandbox wraps, the protected-path
// watch before the start and its check after the last writer is gone.
func (c Commands) Run(ctx context.Context, cmd workspace.Command, _ func(session.ToolDisplay)) (workspace.CommandResult, error) {
	if err := ctx.Err(); err != nil {
		return workspace.CommandResult{}, err
	}
	if c.Sandbox != nil && !cmd.Unsandboxed {
		// Refused before anything is recorded or started.
		if err := c.Sandbox.Check(); err != nil {
			return workspace.CommandResult{}, &tool.Error{Code: sandbox.CodeUnavailable, Message: err.Error()}
		}
	}
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, cmd.Timeout, errTimedOut)
		defer cancel()
	}
	shell := c.Shell
	if shell == "" {
		shell = "bash"
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	limit := cmd.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return workspace.CommandResult{}, fmt.Errorf("run command: %w", err)
	}
	env := c.Env
	if cmd.Env != nil {
		env = cmd.Env // the agent's environment without secrets
	}
	if env == nil {
		env = os.Environ()
	}
	marker := cmd.Marker
	if marker == "" {
		marker = NewMarker()
	}
	if cmd.Record != nil {
		// The marker is durable before anything runs, so a restart after
		// the agent died can find what is left of the command.
		if err := cmd.Record(ctx, marker); err != nil {
			pr.Close()
			pw.Close()
			return workspace.CommandResult{}, fmt.Errorf("record command: %w", err)
		}
	}
	var rec *RunningEntry
	if c.Running != nil {
		rec, err = c.Running.Add(marker)
		if err != nil {
			pr.Close()
			pw.Close()
			return workspace.CommandResult{}, fmt.Errorf("record command: %w", err)
		}
		// Deferred: runs after everything carrying the marker is stopped.
		defer rec.Remove()
	}
	ec := exec.Command(shell, "-c", cmd.Command)
	ec.Dir = cmd.Cwd
	ec.Env = append(env[:len(env):len(env)], marker)
	ec.SysProcAttr = sysProcAttr()
	var sandboxed string
	var guard *sandbox.Guard
	if c.Sandbox != nil && !cmd.Unsandboxed {
		if guard, err = c.Sandbox.Prepare(ec); err != nil {
			pr.Close()
			pw.Close()
			return workspace.CommandResult{}, &tool.Error{Code: sandbox.CodeUnavailable, Message: err.Error()}
		}
		sandboxed = c.Sandbox.Describe(cmd.Cwd)
	}
	// Watched from before the start, so nothing it creates is missed.
	unwatch := guard.Watch()
	// Last, so the reaper holds whatever the sandbox wraps.
	proc, err := c.launch(ctx, ec, marker, grace, pw)
	if err != nil {
		unwatch()
		pr.Close()
		pw.Close()
		return workspace.CommandResult{}, fmt.Errorf("run command: %w", err)
	}
	pw.Close() // the children hold the only write ends now
	pgid := proc.pid()
	if rec != nil {
		rec.SetGroup(pgid)
	}

	tail := &tailBuffer{limit: limit}
	var sink io.Writer = tail
	if cmd.OnOutput != nil {
		sink = io.MultiWriter(tail, outputFunc(cmd.OnOutput))
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(sink, pr)
	}()

	res := workspace.CommandResult{Sandbox: sandboxed}
	select {
	case <-proc.done():
	case <-ctx.Done():
		res.TimedOut = errors.Is(context.Cause(ctx), errTimedOut)
		proc.stop()
	}
	ws, clean := proc.finish()
	if !clean {
		// No reaper, or it was killed before it reaped everything: stop
		// what is left in the group, then what left it (setsid) and
		// still carries the marker, which also releases the output pipe,
		// then what is left in its cgroup, marker or not.
		stopGroup(pgid, grace, nil)
		sweepMarked(grace, marker)
		killCgroup(marker, grace)
	}
	// Nothing of the command is left to write: move aside the protected
	// paths it created (those at the top were moved as they appeared).
	unwatch()
	moved, gerr := guard.Check()
	for _, m := range moved {
		res.Quarantined = append(res.Quarantined, workspace.MovedPath{Path: m.Path, To: m.To})
	}
	if gerr != nil {
		res.GuardError = gerr.Error()
	}
	select {
	case <-readDone:
	case <-time.After(drainGrace):
		pr.Close() // unblocks the reader
		<-readDone
	}
	pr.Close()

	res.Output, res.Truncated = tail.String()
	if ws.Signaled() {
		res.Signal = ws.Signal().String()
	} else {
		code := ws.ExitStatus()
		res.ExitCode = &code
	}
	if !res.TimedOut && ctx.Err() != nil {
		return res, context.Cause(ctx)
	}
	return res, nil
}

// stopGroup sends SIGTERM to the process group, waits up to grace for the
// shell to be reaped (waitDone) or, when waitDone is nil, for the group to
// empty, then sends SIGKILL. With waitDone it returns after the shell is
// reaped.
func stopGroup(pgid int, grace time.Duration, waitDone <-chan struct{}) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil && waitDone == nil {
		return // the group is already empty
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	if waitDone != nil {
		select {
		case <-waitDone:
			// Members that ignored SIGTERM are killed below.
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-waitDone
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if syscall.Kill(-pgid, 0) != nil {
				return
			}
			// Orphans are reaped by init, which may be slow or absent in
			// a container; a group of zombies is harmless, a live
			// member is killed when the grace ends.
			if groupAllZombies(pgid) {
				return
			}
		case <-timer.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
	}
}

// outputFunc streams what is written to it (Command.OnOutput).
type outputFunc func([]byte)

func (f outputFunc) Write(p []byte) (int, error) {
	f(p)
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit     int
	buf       []byte
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.limit {
		t.truncated = t.truncated || len(p) > t.limit || len(t.buf) > 0
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.limit; over > 0 {
		t.truncated = true
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the kept output, starting at a rune boundary when the
// head was cut.
func (t *tailBuffer) String() (string, bool) {
	b := t.buf
	if t.truncated {
		for i := 0; i < utf8.UTFMax && i < len(b) && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b), t.truncated
}
