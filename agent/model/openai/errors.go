package openai

// This file defines the typed errors a provider call can end with.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Code classifies a provider failure. The spellings are stable and may be
// shown to users and matched by callers.
type Code string

// Provider failure codes.
const (
	// CodeAuth: HTTP 401 or 403, the key is missing or was rejected.
	CodeAuth Code = "PROVIDER_AUTH"
	// CodeRateLimited: HTTP 429 after the retries were used up.
	CodeRateLimited Code = "PROVIDER_RATE_LIMITED"
	// CodeUnavailable: HTTP 5xx after the retries were used up.
	CodeUnavailable Code = "PROVIDER_UNAVAILABLE"
	// CodeRejected: any other non-2xx status (bad request, unknown model, ...).
	CodeRejected Code = "PROVIDER_REJECTED"
	// CodeTransport: no HTTP response (connection refused, reset, DNS)
	// after the retries were used up.
	CodeTransport Code = "PROVIDER_TRANSPORT"
	// CodeStreamCut: the response stream broke or ended before the model
	// reported a finish reason. The chunks before the cut were delivered.
	CodeStreamCut Code = "PROVIDER_STREAM_CUT"
	// CodeStreamError: the stream carried an in-band error event or a chunk
	// that is not valid JSON.
	CodeStreamError Code = "PROVIDER_STREAM_ERROR"
	// CodeIdleTimeout: the provider sent no byte for Config.IdleTimeout
	// (before the response or mid-stream). Retried like CodeTransport while
	// nothing of the answer was delivered.
	CodeIdleTimeout Code = "PROVIDER_IDLE_TIMEOUT"
	// CodeContextLength: the provider refused the request because it does
	// not fit the model's context window (context_length_exceeded).
	CodeContextLength Code = "PROVIDER_CONTEXT_LENGTH"
	// CodeRoute: the request named a route this model cannot serve.
	CodeRoute Code = "PROVIDER_ROUTE"
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
