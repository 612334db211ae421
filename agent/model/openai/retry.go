package openai

// This file opens the response stream, retrying 429, 5xx and connection
// failures with bounded exponential backoff that honours Retry-After.
//
// The retries are ours rather than the SDK's (option.WithMaxRetries is set
// to 0): the SDK's base delay is fixed at half a second, which would make
// the tests slow, and its policy also retries 408 and 409. Ours has an
// injectable base (Config.RetryBase), a configurable bound
// (Config.MaxRetries, Config.MaxRetryDelay) and reports the attempts made
// in the final error. Only opening the stream is retried: once a chunk has
// been yielded, a failure ends the call, because the consumer has already
// seen part of the answer.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/backoff"
	"github.com/acp-agent/acp-agent/agent/model/idle"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// open sends the request until it gets a 2xx response, a non-retryable
// failure, or runs out of attempts, counting from attempt first. It
// returns the event stream, the watchdog of the attempt that opened it
// (the caller stops it once done with the stream) and the number of
// attempts made; the caller closes the stream. Before each retry wait the
// request's Notify hears a NoticeRetry.
func (c *client) open(ctx context.Context, p oai.ChatCompletionNewParams, first int, req model.Request) (*ssestream.Stream[wireChunk], *idle.Watchdog, int, error) {
	for attempt := first; ; attempt++ {
		var resp *http.Response
		wd := newWatchdog(ctx, c.cfg.IdleTimeout)
		s := c.svc.NewStreaming(wd.Context(), p, option.WithResponseInto(&resp))
		err := s.Err()
		if err == nil && resp != nil {
			// Decode the events ourselves (see wire.go); the SDK's
			// stream wraps the same body and is dropped unread.
			wd.Kick()
			wd.Watch(resp)
			return ssestream.NewStream[wireChunk](ssestream.NewDecoder(resp), nil), wd, attempt, nil
		}
		_ = s.Close()
		idle := wd.Fired()
		wd.Stop()
		if err == nil {
			err = errors.New("no HTTP response") // not expected from the SDK
		}
		if ctx.Err() != nil {
			return nil, nil, attempt, c.ctxErr(ctx)
		}
		pe := c.classify(err, resp)
		if idle {
			pe.Code, pe.Status, pe.Err = CodeIdleTimeout, 0, context.Cause(wd.Context())
		}
		if attempt > 1 {
			pe.Attempts = attempt
		}
		if !retryable(pe.Code) || attempt > c.cfg.MaxRetries {
			return nil, nil, attempt, pe
		}
		d, ok := c.delay(attempt, resp, time.Now())
		if !ok {
			pe.RetryAfter = d
			return nil, nil, attempt, pe
		}
		c.retryNotice(ctx, req, pe, attempt, d)
		if !backoff.Sleep(ctx, d) {
			return nil, nil, attempt, c.ctxErr(ctx)
		}
	}
}

// retryNotice logs a retry and tells the person about the wait.
func (c *client) retryNotice(ctx context.Context, req model.Request, pe *ProviderError, attempt int, d time.Duration) {
	c.log.WarnContext(ctx, "model request retry", "status", pe.Status, "code", string(pe.Code), "attempt", attempt, "delay", d)
	req.Notice(model.Notice{
		Kind: model.NoticeRetry, Message: RetryMessage(pe, d),
		Attempt: attempt, Delay: d, Status: pe.Status,
	})
}

// RetryMessage is the short notice shown while waiting to retry, e.g.
// "retrying in 4 s (HTTP 429)".
func RetryMessage(pe *ProviderError, d time.Duration) string {
	var wait string
	switch {
	case d >= time.Second:
		wait = fmt.Sprintf("%d s", int((d+time.Second/2)/time.Second))
	default:
		wait = fmt.Sprintf("%d ms", d.Milliseconds())
	}
	var why string
	switch {
	case pe.Code == CodeIdleTimeout:
		why = "no data from the provider"
	case pe.Status != 0:
		why = fmt.Sprintf("HTTP %d", pe.Status)
	default:
		why = "no response"
	}
	return fmt.Sprintf("retrying in %s (%s)", wait, why)
}

// classify turns a failed request into a ProviderError. The provider's
// message is kept except for auth failures, whose text can echo part of
// the key.
func (c *client) classify(err error, resp *http.Response) *ProviderError {
	pe := &ProviderError{Provider: c.provider, Coded: errcode.Coded[Code]{Err: err}}
	if resp != nil {
		pe.Status = resp.StatusCode
	}
	var ae *oai.Error
	if errors.As(err, &ae) {
		if ae.StatusCode != 0 {
			pe.Status = ae.StatusCode
		}
		pe.ProviderCode, pe.Message = ae.Code, ae.Message
	}
	switch s := pe.Status; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		pe.Code, pe.KeyEnv, pe.Message = CodeAuth, c.keyEnv, ""
	case s == http.StatusTooManyRequests:
		pe.Code = CodeRateLimited
	case s == http.StatusBadRequest && contextLength(pe.ProviderCode, pe.Message):
		pe.Code, pe.Err = CodeContextLength, fmt.Errorf("%w: %w", model.ErrContextLength, err)
	case s >= 500:
		pe.Code = CodeUnavailable
	case s == 0:
		pe.Code = CodeTransport
	default:
		pe.Code = CodeRejected
	}
	return pe
}

// contextLength recognizes the providers' "does not fit the context
// window" refusals: OpenAI's error code, and the message DeepSeek and
// OpenAI-compatible servers send with a generic code.
func contextLength(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "context_length_exceeded") || strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context window")
}

func retryable(c Code) bool {
	return c == CodeRateLimited || c == CodeUnavailable || c == CodeTransport || c == CodeIdleTimeout
}

// delay returns how long to wait before attempt+1, and false when the
// server asks for longer than MaxRetryDelay (the wait is then returned for
// the error message). Without Retry-After it backs off exponentially from
// RetryBase with equal jitter, capped at MaxRetryDelay.
func (c *client) delay(attempt int, resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp != nil {
		if d, ok := backoff.RetryAfter(resp.Header, now); ok {
			return d, d <= c.cfg.MaxRetryDelay
		}
	}
	b := c.cfg.RetryBase
	for i := 1; i < attempt && b < c.cfg.MaxRetryDelay; i++ {
		b *= 2
	}
	b = min(b, c.cfg.MaxRetryDelay)
	return b/2 + rand.N(b/2+1), true
}
