package anthropic

// This file defines the idle timeout of one attempt, as in the
// OpenAI-compatible provider: a provider that stops sending bytes (before
// the response headers or mid-stream) is not waited on forever. Each
// attempt runs under its own context, cancelled with an *idleError cause
// when no byte arrived for Config.IdleTimeout; before any content that is
// retried like a failed open, after content the call ends with
// PROVIDER_IDLE_TIMEOUT (model.ErrStreamBroken: the agent retries).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultIdleTimeout is the idle timeout when Config.IdleTimeout is 0.
const DefaultIdleTimeout = 120 * time.Second

// errIdle is wrapped by every idle-timeout cause.
var errIdle = errors.New("provider sent nothing within the idle timeout")

type idleError struct{ d time.Duration }

func (e *idleError) Error() string { return fmt.Sprintf("no data from the provider for %s", e.d) }
func (e *idleError) Unwrap() error { return errIdle }

// watchdog cancels its attempt's context when kick is not called for d.
// The timer's goroutine is the runtime's; stop releases it.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration
	t      *time.Timer
}

// newWatchdog starts the attempt context of one request. d <= 0 disables
// the timeout.
func newWatchdog(parent context.Context, d time.Duration) *watchdog {
	w := &watchdog{d: d}
	w.ctx, w.cancel = context.WithCancelCause(parent)
	if d > 0 {
		w.t = time.AfterFunc(d, func() { w.cancel(&idleError{d}) })
	}
	return w
}

// kick restarts the idle period: a byte arrived.
func (w *watchdog) kick() {
	if w.t != nil && w.ctx.Err() == nil {
		w.t.Reset(w.d)
	}
}

// stop ends the attempt and its timer.
func (w *watchdog) stop() {
	if w.t != nil {
		w.t.Stop()
	}
	w.cancel(nil)
}

// fired reports whether the attempt ended by the idle timeout (and not by
// the caller's own cancellation).
func (w *watchdog) fired() bool {
	return errors.Is(context.Cause(w.ctx), errIdle)
}

// watch wraps the response body so every byte read kicks the watchdog.
func (w *watchdog) watch(resp *http.Response) {
	resp.Body = idleBody{ReadCloser: resp.Body, w: w}
}

type idleBody struct {
	io.ReadCloser
	w *watchdog
}

func (b idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.kick()
	}
	return n, err
}
