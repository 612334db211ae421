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
	Cwd string
	// Roots are the session's additional workspace roots (ACP
	// additionalDirectories): absolute directories whose paths are inside
	// the boundary as the cwd's are (ResolvePathIn).
	Roots       []string
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
	// Unsandboxed asks to run outside the sandbox of Commands that have
	// one (SandboxOf); the person is asked first.
	Unsandboxed bool
	// Env, when non-nil, is the whole environment of a local command (the
	// agent's without its secrets); Unset names the variables a client
	// terminal, which starts from the editor's environment, must remove.
	Env   []string
	Unset []string
	// Marker, when set, is the "NAME=value" environment entry that marks
	// every process of the command (local commands make one otherwise).
	Marker string
	// Record, when set, is called with the marker before the command
	// starts; an error stops the command from starting. The session log
	// records it so that a restart can kill what an agent that died left.
	Record func(ctx context.Context, marker string) error
	// OnOutput, when set, is called with the command's output as it is
	// produced (a local command's; a client terminal shows its own), on
	// one goroutine, in order; it must not keep p.
	OnOutput func(p []byte)
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
	// Sandbox describes the sandbox the command ran in; "" when none.
	Sandbox string
	// Quarantined are the protected paths (.git, .vscode, the agent's
	// settings, …) that the sandboxed command created, which it may not:
	// each was moved aside once the command was over.
	Quarantined []MovedPath
	// GuardError, when set, says the look for protected paths the
	// sandboxed command created failed, so some may be left.
	GuardError string
}

// MovedPath is a path and the name it was moved to.
type MovedPath struct {
	Path string `json:"path"`
	To   string `json:"to"`
}

// Commands runs shell commands. Run kills the command (its whole process
// group, or the client terminal) when ctx ends or the timeout passes, and
// returns only after it is gone. display, if non-nil, is called once the
// command is visible somewhere (a client terminal to embed).
type Commands interface {
	Run(ctx context.Context, cmd Command, display func(session.ToolDisplay)) (CommandResult, error)
}

// Sandboxed is implemented by Commands that run commands in a sandbox
// unless Command.Unsandboxed is set.
type Sandboxed interface {
	// Sandbox describes what a command in cwd may do.
	DescribeSandbox(cwd string) string
}

// KeepsProtected is implemented by sandboxed Commands that keep the
// protected paths (.git at any depth, editor task files, the agent's
// settings) read-only for sandboxed commands in cwd; without it a
// sandboxed command could plant a git hook that runs unsandboxed later,
// so accept-edits asks before sandboxed commands.
type KeepsProtected interface {
	KeepsProtected(cwd string) bool
}

// SandboxKeepsProtected reports whether c's sandbox keeps the protected
// paths of cwd read-only.
func SandboxKeepsProtected(c Commands, cwd string) bool {
	k, ok := c.(KeepsProtected)
	return ok && k.KeepsProtected(cwd)
}

// SandboxOf describes the sandbox c runs commands in cwd under, or "".
func SandboxOf(c Commands, cwd string) string {
	if s, ok := c.(Sandboxed); ok {
		return s.DescribeSandbox(cwd)
	}
	return ""
}

// Permission kinds, as ACP tool kinds.
const (
	KindRead    = "read"
	KindEdit    = "edit"
	KindExecute = "execute"
	KindSearch  = "search"
	// KindOther is a tool with effects that is neither an edit nor a
	// command (an MCP tool the server does not mark read-only).
	KindOther = "other"
)

// ReadOnlyKind reports whether kind has no effects: only read and search
// calls inside the cwd run without the gate's say-so in every mode.
func ReadOnlyKind(kind string) bool { return kind == KindRead || kind == KindSearch }

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
	// Sandboxed is set for a command that will run in the sandbox; in
	// accept-edits mode it runs without asking when SandboxKeepsProtected
	// (the sandbox keeps .git and the other protected paths read-only).
	Sandboxed             bool
	SandboxKeepsProtected bool
	// Subject is what rules match and "always" answers cover: the exact
	// command line for bash, the path (relative to the cwd when inside)
	// for file tools, empty for MCP tools (their Tool name is the subject).
	Subject string
	// Resolved is the path the subject resolves to (symlinks evaluated),
	// relative to the real cwd when inside it, else absolute; "" for
	// commands and MCP tools. Allow rules must match both, deny and ask
	// rules either (ResolvedSubject).
	Resolved string
	// Detail is shown as the request's text content (markdown): the whole
	// command in a code block, an MCP call's server, tool and arguments,
	// and secondary text such as the model's own description.
	Detail string
	// Protected, when set, says why the path is protected (a write there
	// can become a command: .git/, editor task files, the agent's
	// settings): such a call asks in every mode but bypass.
	Protected string
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
	// CodeRuleDenies: a deny rule of the settings files covers the call.
	CodeRuleDenies = "RULE_DENIES"
)

// ReadFilter is implemented by Permissions whose rules deny reading some
// paths (a settings `deny` rule such as `read(.env)`): the search tools
// skip such files without asking, as the read tool refuses them.
type ReadFilter interface {
	// ReadDenied reports whether tool (of kind KindSearch or KindRead)
	// may not read the file shown as name (relative to the cwd when
	// inside it).
	ReadDenied(tool, kind, name string) bool
}

// ReadDenied reports whether p denies tool reading name (false when p has
// no rules).
func ReadDenied(p Permissions, tool, kind, name string) bool {
	f, ok := p.(ReadFilter)
	return ok && f.ReadDenied(tool, kind, name)
}
