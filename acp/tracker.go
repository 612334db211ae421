package acp

// This file defines the tracker: a count of the server's goroutines (or
// handlers) that can be waited for with a deadline without leaving a
// waiter goroutine behind when the deadline passes.

import (
	"context"
	"sync"
)

// tracker counts running work like sync.WaitGroup, but Wait takes a
// context and spawns nothing: a timed-out Wait returns and leaves no
// goroutine without an owner. The zero value is ready.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// Add adds delta (which may be negative) to the count.
func (t *tracker) Add(delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += delta
	switch {
	case t.n < 0:
		panic("acp: tracker count below zero")
	case t.n == 0 && t.idle != nil:
		close(t.idle)
		t.idle = nil
	}
}

// Done is Add(-1).
func (t *tracker) Done() { t.Add(-1) }

// Go runs f on a new goroutine counted until f returns.
func (t *tracker) Go(f func()) {
	t.Add(1)
	go func() {
		defer t.Done()
		f()
	}()
}

// Wait returns nil once the count is zero, or ctx's error if ctx ends
// first.
func (t *tracker) Wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
