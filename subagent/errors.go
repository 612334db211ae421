package subagent

// This file defines the typed errors of the subagent runtime and the error
// code catalogue of subagent-contract.md §2.12.

import (
	"errors"
	"fmt"
)

// Code is a stable, wire-visible error code. Callers branch on codes, never
// on message text.
type Code string

// The error code catalogue (subagent-contract.md §2.12). The retired
// SUBAGENT_CONTROL_SESSION_QUERY_UNAVAILABLE is deliberately absent.
const (
	CodeProjectionsUnavailable       Code = "SUBAGENT_CONTROL_PROJECTIONS_UNAVAILABLE"
	CodeSessionStoreUnavailable      Code = "SUBAGENT_CONTROL_SESSION_STORE_UNAVAILABLE"
	CodeCancelled                    Code = "CANCELLED"
	CodeDuplicateProvider            Code = "DUPLICATE_PROVIDER"
	CodeNoProvider                   Code = "NO_PROVIDER"
	CodeUnsupportedCapability        Code = "UNSUPPORTED_CAPABILITY"
	CodeContinuationUnavailable      Code = "CONTINUATION_UNAVAILABLE"
	CodePersistenceUnavailable       Code = "PERSISTENCE_UNAVAILABLE"
	CodeDuplicateChild               Code = "DUPLICATE_CHILD"
	CodeUnauthorized                 Code = "UNAUTHORIZED"
	CodeNotResumable                 Code = "NOT_RESUMABLE"
	CodeDraining                     Code = "DRAINING"
	CodeActivationClosing            Code = "ACTIVATION_CLOSING"
	CodeParentUnavailable            Code = "PARENT_UNAVAILABLE"
	CodeActivationTeardownFailed     Code = "ACTIVATION_TEARDOWN_FAILED"
	CodeActivationSetupRevoked       Code = "ACTIVATION_SETUP_REVOKED"
	CodeActivationSetupReleaseFailed Code = "ACTIVATION_SETUP_RELEASE_FAILED"
)

// SubagentError is a typed failure of the subagent runtime. Code is stable;
// Message is for people; Err is an optional cause.
//
// tool.ErrorResult recognises it through ErrorCode and Name, so a tool that
// returns it keeps {name:"SubagentError", code} in its error result.
type SubagentError struct {
	Code    Code
	Message string
	Err     error
}

// NewError returns a *SubagentError with the given code and message.
func NewError(code Code, message string) *SubagentError {
	return &SubagentError{Code: code, Message: message}
}

// Errorf returns a *SubagentError whose message is formatted; a %w verb
// also becomes its cause.
func Errorf(code Code, format string, args ...any) *SubagentError {
	err := fmt.Errorf(format, args...)
	return &SubagentError{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

func (e *SubagentError) Error() string { return e.Message }

// Unwrap returns the cause, if any.
func (e *SubagentError) Unwrap() error { return e.Err }

// Is reports whether target is a *SubagentError with the same code, so
// errors.Is(err, subagent.NewError(subagent.CodeCancelled, "")) matches by
// code alone.
func (e *SubagentError) Is(target error) bool {
	t, ok := target.(*SubagentError)
	return ok && t.Code == e.Code
}

// ErrorCode returns the stable code as a string.
func (e *SubagentError) ErrorCode() string { return string(e.Code) }

// Name returns "SubagentError", the error's class name on the wire.
func (e *SubagentError) Name() string { return "SubagentError" }

// HasCode reports whether err is or wraps a *SubagentError with code.
func HasCode(err error, code Code) bool {
	var se *SubagentError
	return errors.As(err, &se) && se.Code == code
}

// SubagentDepthError reports a child that would exceed the delegation depth
// budget. It is deliberately not a SubagentError (subagent-contract.md §2.2).
type SubagentDepthError struct {
	AttemptedDepth int
	MaxDepth       int
}

func (e *SubagentDepthError) Error() string {
	return fmt.Sprintf("subagent depth %d exceeds maxDepth %d", e.AttemptedDepth, e.MaxDepth)
}

// Name returns "SubagentDepthError".
func (e *SubagentDepthError) Name() string { return "SubagentDepthError" }
