package workspace

import (
	"context"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Codes of workspace failures other than a refused permission. Files
// implementations return them as *tool.Error so that the model sees the
// code.
const (
	// CodeFileNotFound: the file does not exist.
	CodeFileNotFound = "FILE_NOT_FOUND"
	// CodeBinaryFile: the file is not text (it holds NUL bytes or is not
	// valid UTF-8 where text is required).
	CodeBinaryFile = "BINARY_FILE"
	// CodeFileTooLarge: a whole-file read (or one window) is over the cap.
	CodeFileTooLarge = "FILE_TOO_LARGE"
	// CodeNotRegularFile: the path is a directory, FIFO, device or socket.
	CodeNotRegularFile = "NOT_REGULAR_FILE"
	// CodeNoWorkspace: the session has no workspace (no resolver, cwd or
	// implementation).
	CodeNoWorkspace = "NO_WORKSPACE"
)

// EnvFor returns the workspace of the session that made inv. It fails
// with CodeNoWorkspace when there is no resolver or caller, or the
// resolved workspace lacks an absolute cwd.
func EnvFor(ctx context.Context, r Resolver, inv tool.Invocation) (Env, error) {
	if r == nil || inv.Caller == nil {
		return Env{}, &tool.Error{Code: CodeNoWorkspace, Message: "no workspace is available to this agent"}
	}
	env, err := r.Env(ctx, inv.Caller.SessionID())
	if err != nil {
		return Env{}, err
	}
	if env.Cwd == "" {
		return Env{}, &tool.Error{Code: CodeNoWorkspace, Message: "the session has no working directory"}
	}
	return env, nil
}

// Authorize asks p for req. A nil gate refuses: an effect is never
// allowed because nobody was asked.
func Authorize(ctx context.Context, p Permissions, req PermissionRequest) error {
	if p == nil {
		return &tool.Error{Code: CodePermissionRejected, Message: "no permission gate is available; " + req.Tool + " was not run"}
	}
	return p.Authorize(ctx, req)
}

// Static is a Resolver that gives every session the same workspace (tests
// and tools-only use).
type Static Env

// Env returns the workspace.
func (s Static) Env(context.Context, string) (Env, error) { return Env(s), nil }

// Failed is the model-visible error result for err, keeping its code (as
// tool.ErrorResult does) and showing d (the locations or diff the call
// was about) in the editor.
func Failed(err error, d *session.ToolDisplay) tool.Result {
	r := tool.ErrorResult(err)
	r.Display = d
	return r
}

// InvalidArgs is the error for arguments the schema admits but the tool
// cannot use.
func InvalidArgs(format string, a ...any) error {
	return &tool.Error{Code: tool.CodeInvalidArgs, Message: fmt.Sprintf(format, a...)}
}
