package acp

// This file runs workspace commands in client terminals (terminal/*):
// create, embed in the tool call at once, wait for exit (killing on
// timeout or cancellation), read the output, release.

import (
	"context"
	"fmt"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// terminalCleanupTimeout bounds the kill / output / release calls made
// after a command ended or was abandoned (the client may be gone).
const terminalCleanupTimeout = 5 * time.Second

// clientTerminal runs commands in terminals of the client of session.
type clientTerminal struct {
	s       *Server
	session string
}

var _ workspace.Commands = (*clientTerminal)(nil)

// Run runs cmd through "bash -c" (as the local implementation does) in a
// client terminal. When ctx ends or the timeout passes it kills the
// terminal's command and waits (bounded) for it to exit; the result then
// has TimedOut set, or the error is ctx's cause. The terminal is always
// released.
//
// It is long because it is one client-terminal lifetime (create, wait,
// kill on ctx end or timeout, read the output, release) whose release
// must follow every path; splitting it would spread that cleanup.
func (c *clientTerminal) Run(ctx context.Context, cmd workspace.Command, display func(session.ToolDisplay)) (workspace.CommandResult, error) {
	conn := c.s.conn
	sid := acpsdk.SessionId(c.session)
	req := acpsdk.CreateTerminalRequest{SessionId: sid, Command: "bash", Args: []string{"-c", cmd.Command}}
	if len(cmd.Unset) > 0 {
		// The terminal starts from the editor's environment: the secrets
		// are removed there by env -u before bash starts.
		req.Command, req.Args = "env", nil
		for _, name := range cmd.Unset {
			req.Args = append(req.Args, "-u", name)
		}
		req.Args = append(req.Args, "bash", "-c", cmd.Command)
	}
	if cmd.Cwd != "" {
		req.Cwd = acpsdk.Ptr(cmd.Cwd)
	}
	if cmd.OutputLimit > 0 {
		req.OutputByteLimit = acpsdk.Ptr(cmd.OutputLimit)
	}
	err := c.s.flushSession(ctx, c.session)
	var created acpsdk.CreateTerminalResponse
	if err == nil {
		created, err = conn.CreateTerminal(ctx, req)
	}
	if err != nil {
		if ctx.Err() != nil {
			return workspace.CommandResult{}, context.Cause(ctx)
		}
		return workspace.CommandResult{}, fmt.Errorf("the editor could not create a terminal: %w", err)
	}
	id := created.TerminalId
	res := workspace.CommandResult{TerminalID: id}
	cleanup, cancelCleanup := context.WithTimeout(context.WithoutCancel(ctx), terminalCleanupTimeout)
	defer cancelCleanup()
	defer func() {
		if _, err := conn.ReleaseTerminal(cleanup, acpsdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: id}); err != nil {
			c.s.log.Debug("terminal not released", "terminal_id", id, "err", err)
		}
	}()
	if display != nil {
		display(session.ToolDisplay{TerminalID: id})
		// The embedding update goes out before the wait request.
		if err := c.s.flushSession(ctx, c.session); err != nil {
			c.s.log.Debug("terminal display not flushed", "terminal_id", id, "err", err)
		}
	}

	wait := ctx
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	exit, werr := conn.WaitForTerminalExit(wait, acpsdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: id})
	var runErr error
	if werr != nil {
		// Abandoned (timeout, cancellation) or the wait failed: kill the
		// command and wait, bounded, for it to be gone.
		if _, err := conn.KillTerminal(cleanup, acpsdk.KillTerminalRequest{SessionId: sid, TerminalId: id}); err != nil {
			c.s.log.Debug("terminal not killed", "terminal_id", id, "err", err)
		}
		switch {
		case ctx.Err() != nil:
			runErr = context.Cause(ctx)
		case wait.Err() != nil:
			res.TimedOut = true
		default:
			runErr = fmt.Errorf("the editor's terminal failed: %w", werr)
		}
		exit, _ = conn.WaitForTerminalExit(cleanup, acpsdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: id})
	}
	res.ExitCode, res.Signal = exit.ExitCode, deref(exit.Signal)
	out, err := conn.TerminalOutput(cleanup, acpsdk.TerminalOutputRequest{SessionId: sid, TerminalId: id})
	if err != nil {
		if runErr == nil && !res.TimedOut {
			runErr = fmt.Errorf("the editor did not return the terminal output: %w", err)
		}
		return res, runErr
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	if res.ExitCode == nil && res.Signal == "" && out.ExitStatus != nil {
		res.ExitCode, res.Signal = out.ExitStatus.ExitCode, deref(out.ExitStatus.Signal)
	}
	return res, runErr
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
