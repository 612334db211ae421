package driver

// This file defines Run, the handle of a one-shot child
// (subagent-contract.md §2.2 step 6).

import (
	"context"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Result is the outcome of a one-shot run.
type Result struct {
	Output     []session.Block
	StopReason string
	Diagnostic string
}

// Run is a published one-shot child. Result waits for its outcome; Dispose
// (idempotent) cancels it, waits for it and releases the child.
type Run struct {
	// ID is the child session id.
	ID string
	// LocalAgent is the child agent when it runs in this process.
	LocalAgent *agent.Agent
	// Depth is the child's delegation depth.
	Depth int

	dispose func(ctx context.Context) error

	mu        sync.Mutex
	done      chan struct{}
	settled   bool
	res       Result
	err       error
	observers []func(Result, error)

	disposeOnce sync.Once
	disposeErr  error
}

// NewRun returns an unsettled run. dispose is called once by Dispose; it
// must leave the run settled (call Settle) before returning.
func NewRun(id string, local *agent.Agent, depth int, dispose func(ctx context.Context) error) *Run {
	return &Run{ID: id, LocalAgent: local, Depth: depth, dispose: dispose, done: make(chan struct{})}
}

// Settle records the run's outcome: a result, or an infrastructure error.
// Only the first call counts. Observers run synchronously.
func (r *Run) Settle(res Result, err error) {
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return
	}
	r.settled, r.res, r.err = true, res, err
	obs := r.observers
	r.observers = nil
	close(r.done)
	r.mu.Unlock()
	for _, fn := range obs {
		fn(res, err)
	}
}

// Observe calls fn once the run settles (immediately if it has).
func (r *Run) Observe(fn func(Result, error)) {
	r.mu.Lock()
	if !r.settled {
		r.observers = append(r.observers, fn)
		r.mu.Unlock()
		return
	}
	res, err := r.res, r.err
	r.mu.Unlock()
	fn(res, err)
}

// Done is closed when the run has settled.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result waits for the outcome. The error is an infrastructure failure of
// the run (child-level failures are stop reasons), or ctx's error.
func (r *Run) Result(ctx context.Context) (Result, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res, r.err
}

// Dispose cancels the child if it still runs, waits for it and releases
// it. It is idempotent; it fails only if releasing the child failed.
func (r *Run) Dispose(ctx context.Context) error {
	r.disposeOnce.Do(func() {
		if r.dispose != nil {
			r.disposeErr = r.dispose(ctx)
		}
		// A driver that forgot to settle must not leave waiters hanging.
		r.Settle(Result{StopReason: StopAborted}, nil)
	})
	return r.disposeErr
}
