package workspace

import (
	"context"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Env is the workspace of one session as its tools see it.
type Env struct {
	// Cwd is the session's absolute working directory; relative paths are
	// resolved against it and paths outside it need an explicit permission.
	Cwd         string
	Files       Files
	Commands    Commands
	Permissions Permissions
}

// Resolver returns the workspace of the session a tool call belongs to
// (tool.Invocation.Caller.SessionID()). A child session resolves to its
// own cwd with its root session's client and permission gate.
type Resolver interface {
	Env(ctx context.Context, sessionID string) (Env, error)
}

// Files reads and writes text files by absolute path. Through an ACP
// client they see unsaved editor buffers and land in the editor.
type Files interface {
	// ReadTextFile returns the file's text; line (1-based) and limit
	// (lines) select a window when non-zero.
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	// WriteTextFile replaces the whole file, creating it if needed.
	WriteTextFile(ctx context.Context, path, content string) error
}

// Command is one shell command to run.
type Command struct {
	// CallID is the tool call this command belongs to.
	CallID  string
	Command string
	// Cwd is absolute.
	Cwd     string
	Timeout time.Duration
	// OutputLimit caps the bytes of output kept (the tail is kept).
	OutputLimit int
	// Marker, when set, is the "NAME=value" environment entry that marks
	// every process of the command (local commands make one otherwise).
	Marker string
	// Record, when set, is called with the marker before the command
	// starts; an error stops the command from starting. The session log
	// records it so that a restart can kill what an agent that died left.
	Record func(ctx context.Context, marker string) error
}

// CommandResult is how a command ended.
type CommandResult struct {
	Output    string
	Truncated bool
	// ExitCode is nil when the command was killed by a signal.
	ExitCode *int
	Signal   string
	TimedOut bool
	// TerminalID is the client terminal the command ran in, if any.
	TerminalID string
}

// Commands runs shell commands. Run kills the command (its whole process
// group, or the client terminal) when ctx ends or the timeout passes, and
// returns only after it is gone. display, if non-nil, is called once the
// command is visible somewhere (a client terminal to embed).
type Commands interface {
	Run(ctx context.Context, cmd Command, display func(session.ToolDisplay)) (CommandResult, error)
}

// Permission kinds, as ACP tool kinds.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindExecute = "execute"
	KindSearch  = "search"
)

// PermissionRequest asks to perform one tool call's effect.
type PermissionRequest struct {
	CallID string
	// Tool is the tool name; Kind its ACP kind (KindEdit, KindExecute, or
	// KindRead for a read outside the cwd).
	Tool  string
	Kind  string
	Title string
	// Display shows what will happen (the diff, the locations).
	Display *session.ToolDisplay
	// OutsideCwd is set when a path lies outside the session cwd (after
	// resolving ".." and symlinks); such a call is never allowed silently.
	OutsideCwd bool
}

// Permissions authorizes effects. Authorize returns nil when the call may
// proceed, or an error carrying one of the codes below (a *tool.Error),
// which the tool returns to the model as its result.
type Permissions interface {
	Authorize(ctx context.Context, req PermissionRequest) error
}

// Codes of a refused call.
const (
	// CodePermissionRejected: the user rejected the call.
	CodePermissionRejected = "PERMISSION_REJECTED"
	// CodePermissionCancelled: the prompt was cancelled, or the editor
	// disconnected, while asking (no one rejected the call).
	CodePermissionCancelled = "PERMISSION_CANCELLED"
	// CodeModeForbids: the session mode does not allow this kind of call
	// (plan mode allows read-only tools only).
	CodeModeForbids = "MODE_FORBIDS"
)
