package subagent

// This file defines the typed errors of the subagent runtime and the error
// code catalogue of subagent-contract.md §2.12.

import (
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/internal/errcode"
)

// SubagentError is a typed failure of the subagent runtime: the module's
// one typed-error shape (errcode.Coded: stable Code, Message for people,
// optional cause Err, ErrorCode) with the runtime's codes and a wire class
// name. errors.Is(err, subagent.NewError(subagent.CodeCancelled, ""))
// matches by code alone.
//
// tool.ErrorResult recognises it through ErrorCode and Name, so a tool that
// returns it keeps {name:"SubagentError", code} in its error result.
type SubagentError struct {
	errcode.Coded[Code]
}

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

// NewError returns a *SubagentError with the given code and message.
func NewError(code Code, message string) *SubagentError {
	return &SubagentError{*errcode.New(code, message)}
}

// Errorf returns a *SubagentError whose message is formatted; a %w verb
// also becomes its cause.
func Errorf(code Code, format string, args ...any) *SubagentError {
	return &SubagentError{*errcode.Errorf(code, format, args...)}
}

// wrapError returns a *SubagentError with an explicit cause.
func wrapError(code Code, message string, cause error) *SubagentError {
	return &SubagentError{errcode.Coded[Code]{Code: code, Message: message, Err: cause}}
}

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
