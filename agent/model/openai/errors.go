package openai

// This file defines the typed errors a provider call can end with.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Code classifies a provider failure: the codes every provider shares
// (model.ProviderCode).
type Code = model.ProviderCode

// Provider failure codes (model.ProviderCode); CodeIdleTimeout is retried
// like CodeTransport while nothing of the answer was delivered.
const (
	CodeAuth          = model.ProviderAuth
	CodeRateLimited   = model.ProviderRateLimited
	CodeUnavailable   = model.ProviderUnavailable
	CodeRejected      = model.ProviderRejected
	CodeTransport     = model.ProviderTransport
	CodeStreamCut     = model.ProviderStreamCut
	CodeStreamError   = model.ProviderStreamError
	CodeIdleTimeout   = model.ProviderIdleTimeout
	CodeContextLength = model.ProviderContextLength
	CodeRoute         = model.ProviderRoute
)

// ProviderError is a failed model call. It never contains the API key.
//
// It embeds the module's one typed-error shape (errcode.Coded): Code is
// the stable classification, Message the provider's own error text (when
// its error body carried one) and Err the underlying error, if any;
// ErrorCode and errors.Is by code come with it. Error is its own: the
// text for people is built from all the fields.
type ProviderError struct {
	errcode.Coded[Code]
	Provider string
	// Status is the HTTP status, 0 when no response was received.
	Status int
	// ProviderCode is the provider's own error code, when its error body
	// carried one.
	ProviderCode string
	// KeyEnv names the variable the key came from (for CodeAuth hints).
	KeyEnv string
	// Attempts counts the HTTP requests made.
	Attempts int
	// RetryAfter is the server-requested delay that was too long to wait.
	RetryAfter time.Duration
}

// Error implements error.
func (e *ProviderError) Error() string {
	var s string
	switch e.Code {
	case CodeAuth:
		hint := "set --api-key-env to the variable that holds the key"
		if e.KeyEnv != "" {
			hint = "check the environment variable " + e.KeyEnv
		}
		s = fmt.Sprintf("%s: API key missing or rejected (HTTP %d); %s", e.Provider, e.Status, hint)
	case CodeRateLimited:
		s = fmt.Sprintf("%s: rate limited (HTTP %d)", e.Provider, e.Status)
	case CodeUnavailable:
		s = fmt.Sprintf("%s: server error (HTTP %d)", e.Provider, e.Status)
	case CodeRejected:
		s = fmt.Sprintf("%s: request rejected (HTTP %d)", e.Provider, e.Status)
	case CodeTransport:
		s = fmt.Sprintf("%s: request failed", e.Provider)
	case CodeStreamCut:
		s = fmt.Sprintf("%s: response stream cut before the model finished", e.Provider)
	case CodeStreamError:
		s = fmt.Sprintf("%s: bad response stream", e.Provider)
	case CodeIdleTimeout:
		s = fmt.Sprintf("%s: provider stopped sending", e.Provider)
	case CodeContextLength:
		s = fmt.Sprintf("%s: request exceeds the model's context window (HTTP %d)", e.Provider, e.Status)
	default:
		s = fmt.Sprintf("%s: %s", e.Provider, e.Code)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (server asked to wait %s)", e.RetryAfter)
	}
	if e.ProviderCode != "" {
		s += " [" + e.ProviderCode + "]"
	}
	if e.Message != "" {
		s += ": " + truncate(e.Message, 300)
	} else if e.Err != nil && e.Code != CodeAuth {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches model.ErrStreamBroken for a stream that stalled or was cut
// after the response opened, and otherwise compares codes (errcode.Coded).
func (e *ProviderError) Is(target error) bool {
	if target == model.ErrStreamBroken {
		return e.Status == 200 && (e.Code == CodeStreamCut || e.Code == CodeIdleTimeout)
	}
	return e.Coded.Is(target)
}

// errRoute reports a request route this model cannot serve.
func errRoute(provider, format string, args ...any) error {
	return &ProviderError{Provider: provider, Coded: errcode.Coded[Code]{Code: CodeRoute, Message: fmt.Sprintf(format, args...)}}
}

// ErrBadRequest marks a model.Request that cannot be mapped to the wire
// (unknown role, invalid tool schema). It is returned wrapped.
var ErrBadRequest = errors.New("openai: bad model request")

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func osGetenv(k string) string { return os.Getenv(k) }
