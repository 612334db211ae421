package acp

// This file defines the package's typed errors and the one function that
// turns any handler error into the JSON-RPC error the SDK sends.

import (
	"context"
	"errors"
	"fmt"
	"github.com/acp-agent/acp-agent/agent/session/readonly"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Code is a stable, wire-visible error code carried in the data of a
// JSON-RPC error ({"code": ..., "message": ...}).
type Code string

// Error codes. The first group maps to JSON-RPC -32602 (invalid params),
// except CodeUnknownSession, which is ACP's -32002 (resource not found); the
// second group maps to -32603 (internal error).
const (
	CodeInvalidParams      Code = "INVALID_PARAMS"
	CodeInvalidSessionID   Code = "INVALID_SESSION_ID"
	CodeUnknownSession     Code = "UNKNOWN_SESSION"
	CodePromptInFlight     Code = "PROMPT_IN_FLIGHT"
	CodeUnsupportedContent Code = "UNSUPPORTED_CONTENT"
	CodeReadOnlySession    Code = readonly.CodeReadOnly
	// CodeSessionDamaged: the session's log is damaged in the middle, so
	// it is open read-only (its valid part shown) until it is repaired.
	CodeSessionDamaged Code = readonly.CodeDamaged
	CodeSessionLocked  Code = "SESSION_LOCKED"
	CodeInvalidCursor  Code = "INVALID_CURSOR"
	// CodeSessionBusy: the session (or one of its subagents) is running,
	// so it cannot be deleted now (session/delete).
	CodeSessionBusy Code = "SESSION_BUSY"

	CodeModelNotConfigured Code = "MODEL_NOT_CONFIGURED"
	// CodeAuthRequired is answered with JSON-RPC -32000 (the ACP
	// auth_required error): a configured model's API key is not set.
	CodeAuthRequired Code = "AUTH_REQUIRED"
	CodeTurnFailed   Code = "TURN_FAILED"
	// CodeReplayFailed: a session/load could not read the session's
	// history back from its log; the load is answered with this error.
	CodeReplayFailed Code = "REPLAY_FAILED"
	CodeShuttingDown Code = "SHUTTING_DOWN"
	CodeInternal     Code = "INTERNAL"
)

// Error is a typed failure of a request: the module's one typed-error
// shape (errcode.Coded) with acp's codes. Err, when set, is the cause;
// errors.Is matches by code, so callers can test
// errors.Is(err, &acp.Error{Code: acp.CodeUnknownSession}).
type Error = errcode.Coded[Code]

// Sentinels that a SessionStore implementation wraps so that the server
// classifies its failures without knowing the storage package.
var (
	// ErrNotFound: no stored session has that id.
	ErrNotFound = errors.New("acp: session not found")
	// ErrLocked: another writer (store or process) holds the session.
	ErrLocked = errors.New("acp: session is held by another writer")
)

// ErrServerClosed is returned by Serve when its context was cancelled (a
// requested stop), as opposed to the peer closing the connection.
var ErrServerClosed = errors.New("acp: server closed")

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// invalidParamCodes are the codes answered with JSON-RPC -32602.
var invalidParamCodes = map[Code]bool{
	CodeInvalidParams: true, CodeInvalidSessionID: true,
	CodePromptInFlight: true, CodeUnsupportedContent: true, CodeReadOnlySession: true, CodeSessionDamaged: true,
	CodeSessionLocked: true, CodeInvalidCursor: true, CodeSessionBusy: true,
}

// toRequestError is the single error mapping of the ACP boundary. It
// returns nil for nil, and otherwise an UNWRAPPED *acpsdk.RequestError: the
// SDK recognises it with a plain type assertion, so a wrapped one would go
// out as a generic internal error (house-style Appendix A.1).
//
//   - *acpsdk.RequestError anywhere in the chain: returned as is;
//   - CodeUnknownSession (ErrNotFound): -32002 "Resource not found:
//     <detail>", the code the ACP schema defines for a session that does
//     not exist; clients branch on it (acpx starts a fresh session only on
//     -32002, so a lost data directory does not fail every later prompt);
//   - *Error with an invalid-params code, session.ErrInvalidID and
//     ErrLocked: -32602 "Invalid params: <detail>";
//   - CodeAuthRequired (model.ErrAuthRequired): -32000 "Authentication
//     required: <detail>";
//   - context.Canceled: -32800 (request cancelled) — never used by Prompt,
//     which answers stopReason "cancelled" instead;
//   - everything else: -32603 with the detail as message.
//
// The data is always {"code": <Code>, "message": <detail>}.
func toRequestError(err error) error {
	if err == nil {
		return nil
	}
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	code := classify(err)
	data := map[string]any{"code": string(code), "message": err.Error()}
	switch {
	case code == CodeUnknownSession:
		return &acpsdk.RequestError{Code: -32002, Message: "Resource not found: " + err.Error(), Data: data}
	case invalidParamCodes[code]:
		return &acpsdk.RequestError{Code: -32602, Message: "Invalid params: " + err.Error(), Data: data}
	case code == CodeAuthRequired:
		return &acpsdk.RequestError{Code: -32000, Message: "Authentication required: " + err.Error(), Data: data}
	case code == CodeInternal && errors.Is(err, context.Canceled):
		return &acpsdk.RequestError{Code: -32800, Message: "Request cancelled", Data: data}
	case code == CodeInternal:
		return &acpsdk.RequestError{Code: -32603, Message: "Internal error: " + err.Error(), Data: data}
	default:
		// A domain failure (no model, failed turn, shutting down): the
		// message is what editors show, so it is the plain explanation.
		return &acpsdk.RequestError{Code: -32603, Message: err.Error(), Data: data}
	}
}

// classify finds the Code of err. Domain errors that carry a stable code
// (ErrorCode, as SubagentError does) keep it.
func classify(err error) Code {
	var e *Error
	var coded interface{ ErrorCode() string }
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &coded) && coded.ErrorCode() != "":
		return Code(coded.ErrorCode())
	case errors.Is(err, session.ErrInvalidID):
		return CodeInvalidSessionID
	case errors.Is(err, ErrNotFound):
		return CodeUnknownSession
	case errors.Is(err, ErrLocked):
		return CodeSessionLocked
	case errors.Is(err, model.ErrNotConfigured):
		return CodeModelNotConfigured
	case errors.Is(err, model.ErrAuthRequired):
		return CodeAuthRequired
	}
	return CodeInternal
}
