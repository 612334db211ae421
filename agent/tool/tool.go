package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Tool is one model-facing tool.
type Tool interface {
	Spec() model.ToolSpec
	// Execute runs the tool. A returned error becomes an error result with
	// text "Error: <message>"; a *Error keeps its code in the result.
	Execute(ctx context.Context, inv Invocation) (Result, error)
}

// Kind is an optional interface: the ACP tool kind shown by editors
// ("read", "edit", "execute", "search", "think", "fetch", "other").
type Kind interface{ Kind() string }

// Locator is an optional interface: the files a call with these arguments
// touches, shown by editors when the call starts (ACP locations). Paths are
// as given by the model; the presenter resolves them. It must be cheap and
// must not fail: bad arguments yield nil.
type Locator interface {
	Locations(args json.RawMessage) []session.ToolLocation
}

// Caller is the agent that called a tool. Tools that need the concrete
// agent type-assert it (subagent tools assert *agent.Agent).
type Caller interface{ SessionID() string }

// Invocation is one tool call.
type Invocation struct {
	CallID    string
	Name      string
	Arguments json.RawMessage
	Caller    Caller
	// Progress reports a short progress line while the tool runs (shown by
	// editors as a tool_call_update). It never blocks; it may be nil.
	Progress func(Progress)
}

// Progress is a transient, unlogged progress report of a running tool.
type Progress struct {
	Text string
	// Meta is attached to the ACP update under _meta (for example
	// "acp-agent/subagent").
	Meta map[string]any
	// Display, when set, replaces the call's content while it runs (for
	// example an embedded terminal as soon as it is created).
	Display *session.ToolDisplay
	// Status, when set, is the call's status with this report ("completed"
	// or "failed": a tool whose work outlives its call, such as a
	// background delegation, closes its call's display when the work ends).
	// Empty means in progress.
	Status string
}

// Result is what a tool returns to the model.
type Result struct {
	Content []session.Block
	IsError bool
	// Raw is the structured value (ACP rawOutput); optional.
	Raw any
	// Error, when IsError, classifies the failure.
	Error *session.ErrorInfo
	// Display is recorded with the result (diffs, locations, terminal,
	// _meta) and shown by editors live and on replay.
	Display *session.ToolDisplay
}

// TextResult returns a successful single-text result.
func TextResult(text string, raw any) Result {
	return Result{Content: []session.Block{session.Text(text)}, Raw: raw}
}

// Error is a typed tool failure with a stable code.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Codes used by the registry.
const (
	CodeInvalidArgs         = "INVALID_ARGS"
	CodeUnknownTool         = "UNKNOWN_TOOL"
	CodeAbortedBeforeStart  = "ABORTED_BEFORE_DISPATCH"
	CodeAborted             = "ABORTED"
	CodeToolFailed          = "TOOL_FAILED"
	CodeToolPanicked        = "TOOL_PANICKED"
	CodeToolNotStarted      = "TOOL_NOT_STARTED"
	CodeToolOutcomeUnknown  = "TOOL_OUTCOME_UNKNOWN"
	CodeToolCallInterrupted = "TOOL_INTERRUPTED"
)

// ErrorResult renders err as the model-visible failure "Error: <message>".
// A *Error keeps its code; an error exposing Code() string or
// ErrorCode() string together with Name() string (such as a SubagentError)
// keeps that code and its Name.
func ErrorResult(err error) Result {
	info := &session.ErrorInfo{Message: err.Error()}
	var te *Error
	var coded interface {
		Code() string
		Name() string
	}
	// A typed error whose code is a field named Code (such as
	// subagent.SubagentError) exposes the code as ErrorCode instead.
	var fieldCoded interface {
		ErrorCode() string
		Name() string
	}
	switch {
	case errors.As(err, &te):
		info.Code = te.Code
	case errors.As(err, &coded):
		info.Code, info.Name = coded.Code(), coded.Name()
	case errors.As(err, &fieldCoded):
		info.Code, info.Name = fieldCoded.ErrorCode(), fieldCoded.Name()
	default:
		info.Code = CodeToolFailed
	}
	return Result{
		Content: []session.Block{session.Text(fmt.Sprintf("Error: %s", err.Error()))},
		IsError: true,
		Error:   info,
	}
}
