package agent

// This file defines the agent's errors and the error codes it records in
// turn/end reasons.

import (
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
)

// ErrClosed is returned by the inbox methods of a closed agent.
var ErrClosed = errors.New("agent: closed")

// Codes recorded in turn/end {kind:"error"} reasons. An error exposing a
// Code() string method keeps its own code instead.
const (
	CodeModelFailed        = "MODEL_FAILED"
	CodeModelNotConfigured = "MODEL_NOT_CONFIGURED"
	CodeHookFailed         = "HOOK_FAILED"
	CodeCheckpointFailed   = "CHECKPOINT_FAILED"
	CodeSessionWrite       = "SESSION_WRITE_FAILED"
	// CodeContextTooLong: the newest turn does not fit the model's context
	// window even with its long texts cut (overflow.go).
	CodeContextTooLong = "CONTEXT_TOO_LONG"
)

// Abort kinds used by the agent itself (session.AbortReason.Kind).
const (
	AbortUser     = "user"
	AbortParent   = "parent"
	AbortHook     = "hook"
	AbortDisposed = "disposed"
	AbortShutdown = "shutdown"
)

// AbortError is the cancellation cause of an aborted turn. The model call
// and tools of the turn see it through context.Cause.
type AbortError struct {
	Reason session.AbortReason
}

func (e *AbortError) Error() string {
	if e.Reason.Detail != "" {
		return fmt.Sprintf("agent: turn aborted (%s: %s)", e.Reason.Kind, e.Reason.Detail)
	}
	return fmt.Sprintf("agent: turn aborted (%s)", e.Reason.Kind)
}

// abortReasonOf extracts the abort reason carried by a cancellation cause.
func abortReasonOf(cause error) session.AbortReason {
	var ae *AbortError
	if errors.As(cause, &ae) {
		return ae.Reason
	}
	if cause == nil {
		return session.AbortReason{Kind: AbortUser}
	}
	return session.AbortReason{Kind: AbortUser, Detail: cause.Error()}
}

// errorInfo renders err for a turn/end reason, keeping a code the error
// declares itself.
func errorInfo(err error, fallback string) *session.ErrorInfo {
	info := &session.ErrorInfo{Message: err.Error(), Code: fallback}
	var coded interface{ Code() string }
	if errors.As(err, &coded) && coded.Code() != "" {
		info.Code = coded.Code()
	}
	var named interface{ Name() string }
	if errors.As(err, &named) {
		info.Name = named.Name()
	}
	return info
}
