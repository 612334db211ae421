package anthropic

import (
	"fmt"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Code classifies a provider failure: the codes every provider shares
// (model.ProviderCode), so callers branch on one set whatever the
// provider.
type Code = model.ProviderCode

// Provider failure codes this provider reports.
const (
	CodeAuth          = model.ProviderAuth
	CodeRateLimited   = model.ProviderRateLimited
	CodeUnavailable   = model.ProviderUnavailable
	CodeContextLength = model.ProviderContextLength
	CodeRejected      = model.ProviderRejected
	CodeTransport     = model.ProviderTransport
	CodeStreamCut     = model.ProviderStreamCut
	CodeStreamError   = model.ProviderStreamError
	CodeIdleTimeout   = model.ProviderIdleTimeout
)

// ProviderError is a failed model call. It never contains the API key.
type ProviderError struct {
	errcode.Coded[Code]
	// Status is the HTTP status, 0 when no response was received.
	Status int
	// ErrorType is the API's error type ("overloaded_error", ...).
	ErrorType string
	KeyEnv    string
	Attempts  int
	// RetryAfter is the server-requested delay that was too long to wait.
	RetryAfter time.Duration
	// InStream: the API reported the failure as an error event of a
	// response stream (its HTTP status was 200).
	InStream bool
}

// Is matches model.ErrStreamBroken for a stream that stalled or was cut
// after the response opened, or that reported overload in the stream
// after content, and otherwise compares codes (errcode.Coded).
func (e *ProviderError) Is(target error) bool {
	if target == model.ErrStreamBroken {
		return e.Status == 200 && (e.Code == CodeStreamCut || e.Code == CodeIdleTimeout || (e.InStream && e.Code == CodeUnavailable))
	}
	return e.Coded.Is(target)
}

// where says how the API reported a failure.
func (e *ProviderError) where() string {
	if e.InStream {
		return " (an error event in the response stream)"
	}
	return fmt.Sprintf(" (HTTP %d)", e.Status)
}

// Error implements error.
func (e *ProviderError) Error() string {
	var s string
	switch e.Code {
	case CodeAuth:
		s = fmt.Sprintf("anthropic: API key missing or rejected (HTTP %d); check the environment variable %s", e.Status, e.KeyEnv)
	case CodeRateLimited:
		s = "anthropic: rate limited" + e.where()
	case CodeUnavailable:
		s = "anthropic: server error or overloaded" + e.where()
	case CodeContextLength:
		s = "anthropic: the conversation is longer than the model's context window"
	case CodeRejected:
		s = fmt.Sprintf("anthropic: request rejected (HTTP %d)", e.Status)
	case CodeTransport:
		s = "anthropic: request failed"
	case CodeStreamCut:
		s = "anthropic: response stream cut before the model finished"
	case CodeStreamError:
		s = "anthropic: bad response stream"
	case CodeIdleTimeout:
		s = "anthropic: provider stopped sending"
	default:
		s = "anthropic: " + string(e.Code)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (server asked to wait %s)", e.RetryAfter)
	}
	if e.ErrorType != "" {
		s += " [" + e.ErrorType + "]"
	}
	if e.Message != "" {
		m := e.Message
		if len(m) > 300 {
			m = m[:300] + "…"
		}
		s += ": " + m
	} else if e.Err != nil && e.Code != CodeAuth {
		s += ": " + e.Err.Error()
	}
	return s
}
