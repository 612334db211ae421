package prompt

// This file lets a session start its environment probe when it is
// created, so its first prompt finds the result ready (or waits only the
// remainder) instead of waiting for git.

import (
	"context"
	"sync/atomic"
)

// Pending is one environment probe that may be started ahead of its use.
// Start runs it on the caller's goroutine (an owner that runs it on a
// goroutine of its own and cancels and waits for it when the session
// closes); Env returns its result, running the probe itself if nothing
// started it. The result is what Probe(ctx, cwd, o) returns. A Pending is
// safe for concurrent use; its probe runs at most once.
type Pending struct {
	cwd     string
	o       ProbeOptions
	started atomic.Bool
	done    chan struct{}
	env     Env // written once, before done is closed
}

// NewPending returns the not yet started probe of cwd.
func NewPending(cwd string, o ProbeOptions) *Pending {
	return &Pending{cwd: cwd, o: o, done: make(chan struct{})}
}

// Start runs the probe unless it was already started, and returns when
// it is done (at once when someone else started it). ctx ending stops
// the git queries (the result then lacks what they would have told).
func (p *Pending) Start(ctx context.Context) {
	if !p.started.CompareAndSwap(false, true) {
		return
	}
	p.env = Probe(ctx, p.cwd, p.o)
	close(p.done)
}

// Env returns the probe's result, waiting for a probe under way (which
// its own timeout bounds). If ctx ends first, Env returns what needs no
// git process (as Probe does under an ended context).
func (p *Pending) Env(ctx context.Context) Env {
	p.Start(ctx)
	select {
	case <-p.done:
		return p.env
	case <-ctx.Done():
		select {
		case <-p.done: // both ready: the full result
			return p.env
		default:
			return Probe(ctx, p.cwd, p.o)
		}
	}
}
