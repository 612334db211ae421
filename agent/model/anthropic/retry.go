package anthropic

// This file opens the response stream, retrying 429, 5xx (529 overloaded
// included) and connection failures with bounded exponential backoff that
// honours Retry-After, like the OpenAI-compatible provider, each wait a
// retry notice. An overloaded or rate-limited error event before any
// content is retried the same way (stream.go); once a chunk was yielded, a
// failure ends the call.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/backoff"
	"github.com/acp-agent/acp-agent/agent/model/idle"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// open sends the request until it gets a 2xx response, a non-retryable
// failure, or runs out of attempts. The caller closes the decoder.
func (m *Model) open(ctx context.Context, p sdk.MessageNewParams, req model.Request) (ssestream.Decoder, *idle.Watchdog, int, error) {
	for attempt := 1; ; attempt++ {
		var resp *http.Response
		wd := newWatchdog(ctx, m.cfg.IdleTimeout)
		s := m.svc.NewStreaming(wd.Context(), p, option.WithResponseInto(&resp))
		err := s.Err()
		if err == nil && resp != nil {
			// Our own event decoding (wire.go) over the same body, every
			// byte of which restarts the idle period.
			wd.Kick()
			wd.Watch(resp)
			return ssestream.NewDecoder(resp), wd, attempt, nil
		}
		_ = s.Close()
		idle := wd.Fired()
		wd.Stop()
		if err == nil {
			err = errors.New("no HTTP response")
		}
		if ctx.Err() != nil {
			return nil, nil, attempt, ctxErr(ctx)
		}
		pe := m.classify(err, resp)
		if idle {
			pe.Code, pe.Status, pe.Err = CodeIdleTimeout, 0, context.Cause(wd.Context())
		}
		if attempt > 1 {
			pe.Attempts = attempt
		}
		if !retryable(pe.Code) || attempt > m.cfg.MaxRetries {
			return nil, nil, attempt, pe
		}
		d, ok := m.delay(attempt, resp)
		if !ok {
			pe.RetryAfter = d
			return nil, nil, attempt, pe
		}
		m.retryNotice(ctx, req, pe, attempt, d)
		if !backoff.Sleep(ctx, d) {
			return nil, nil, attempt, ctxErr(ctx)
		}
	}
}

// retryNotice logs a retry and tells the person about the wait (the
// request's Notify), like the OpenAI-compatible provider.
func (m *Model) retryNotice(ctx context.Context, req model.Request, pe *ProviderError, attempt int, d time.Duration) {
	m.log.WarnContext(ctx, "model request retry", "status", pe.Status, "code", string(pe.Code), "attempt", attempt, "delay", d)
	req.Notice(model.Notice{Kind: model.NoticeRetry, Message: RetryMessage(pe, d), Attempt: attempt, Delay: d, Status: pe.Status})
}

// RetryMessage is the short notice shown while waiting to retry, e.g.
// "retrying in 4 s (HTTP 529)" or "retrying in 800 ms (overloaded_error)".
func RetryMessage(pe *ProviderError, d time.Duration) string {
	wait := fmt.Sprintf("%d ms", d.Milliseconds())
	if d >= time.Second {
		wait = fmt.Sprintf("%d s", int((d+time.Second/2)/time.Second))
	}
	why := "no response"
	switch {
	case pe.Code == CodeIdleTimeout:
		why = "no data from the provider"
	case pe.InStream && pe.ErrorType != "":
		why = pe.ErrorType
	case pe.Status != 0:
		why = fmt.Sprintf("HTTP %d", pe.Status)
	}
	return fmt.Sprintf("retrying in %s (%s)", wait, why)
}

// classify maps a failed request onto the shared codes. The message of an
// auth failure is dropped: it can echo part of the key.
func (m *Model) classify(err error, resp *http.Response) *ProviderError {
	pe := &ProviderError{Coded: errcode.Coded[Code]{Err: err}}
	if resp != nil {
		pe.Status = resp.StatusCode
	}
	var ae *sdk.Error
	if errors.As(err, &ae) {
		if ae.StatusCode != 0 {
			pe.Status = ae.StatusCode
		}
		pe.ErrorType, pe.Message = string(ae.Type()), ae.Message
	}
	pe.Code = codeOf(pe.Status, pe.ErrorType, pe.Message)
	if pe.Code == CodeAuth {
		pe.KeyEnv, pe.Message = m.keyEnv, ""
	}
	if pe.Code == CodeContextLength {
		// The agent compacts and retries on model.ErrContextLength, the
		// same as after the OpenAI-compatible provider's refusal.
		pe.Err = fmt.Errorf("%w: %w", model.ErrContextLength, err)
	}
	return pe
}

// codeOf classifies by HTTP status and the API's error type.
func codeOf(status int, errType, message string) Code {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || errType == "authentication_error" || errType == "permission_error":
		return CodeAuth
	case status == http.StatusTooManyRequests || errType == "rate_limit_error":
		return CodeRateLimited
	case status >= 500 || errType == "overloaded_error" || errType == "api_error":
		return CodeUnavailable
	case contextTooLong(message):
		return CodeContextLength
	case status == 0:
		return CodeTransport
	}
	return CodeRejected
}

// contextTooLong recognizes the API's context-window rejections (HTTP 400
// invalid_request_error "prompt is too long: N tokens > M maximum").
func contextTooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "context window") || strings.Contains(m, "context length")
}

func retryable(c Code) bool {
	return c == CodeRateLimited || c == CodeUnavailable || c == CodeTransport || c == CodeIdleTimeout
}

func (m *Model) delay(attempt int, resp *http.Response) (time.Duration, bool) {
	if resp != nil {
		if d, ok := backoff.RetryAfter(resp.Header, time.Now()); ok {
			return d, d <= m.cfg.MaxRetryDelay
		}
	}
	b := m.cfg.RetryBase
	for i := 1; i < attempt && b < m.cfg.MaxRetryDelay; i++ {
		b *= 2
	}
	b = min(b, m.cfg.MaxRetryDelay)
	return b/2 + rand.N(b/2+1), true
}

// ctxErr wraps the context's error and its cause.
func ctxErr(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && cause != err {
		return fmt.Errorf("anthropic: request aborted: %w: %w", err, cause)
	}
	return fmt.Errorf("anthropic: request aborted: %w", err)
}
