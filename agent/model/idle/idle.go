package idle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Default is the idle timeout when a provider's configuration gives 0.
const Default = 120 * time.Second

// ErrIdle is wrapped by every idle-timeout cause.
var ErrIdle = errors.New("provider sent nothing within the idle timeout")

type idleError struct{ d time.Duration }

func (e *idleError) Error() string { return fmt.Sprintf("no data from the provider for %s", e.d) }
func (e *idleError) Unwrap() error { return ErrIdle }

// Watchdog cancels its attempt's context when Kick is not called for d.
// The timer's goroutine is the runtime's; Stop releases it.
type Watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration
	t      *time.Timer
}

// New starts the attempt context of one request. d <= 0 disables the
// timeout.
func New(parent context.Context, d time.Duration) *Watchdog {
	w := &Watchdog{d: d}
	w.ctx, w.cancel = context.WithCancelCause(parent)
	if d > 0 {
		w.t = time.AfterFunc(d, func() { w.cancel(&idleError{d}) })
	}
	return w
}

// Context is the attempt's context.
func (w *Watchdog) Context() context.Context { return w.ctx }

// Kick restarts the idle period: a byte arrived.
func (w *Watchdog) Kick() {
	if w.t != nil && w.ctx.Err() == nil {
		w.t.Reset(w.d)
	}
}

// Stop ends the attempt and its timer.
func (w *Watchdog) Stop() {
	if w.t != nil {
		w.t.Stop()
	}
	w.cancel(nil)
}

// Fired reports whether the attempt ended by the idle timeout (and not by
// the caller's own cancellation).
func (w *Watchdog) Fired() bool {
	return errors.Is(context.Cause(w.ctx), ErrIdle)
}

// Watch wraps the response body so every byte read kicks the watchdog.
func (w *Watchdog) Watch(resp *http.Response) {
	resp.Body = body{ReadCloser: resp.Body, w: w}
}

type body struct {
	io.ReadCloser
	w *Watchdog
}

func (b body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.Kick()
	}
	return n, err
}
