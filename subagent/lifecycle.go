package subagent

// This file defines lifecycle events and their listeners
// (subagent-contract.md §2.8).

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/acp-agent/acp-agent/agent/session"
)

// LifecycleEvent is one lifecycle notification (subagent-contract.md §2.8).
type LifecycleEvent struct {
	// Type is EventStart, EventEnd, EventProviderAdded or
	// EventProviderRemoved.
	Type     string
	RunID    string
	Provider string
	// ID is the child session id.
	ID string
	// ParentID is the delegating parent's session id (listeners scope by it).
	ParentID   string
	Mode       Mode
	Depth      int
	Local      bool
	StopReason string
	// LastAssistantMessage is nil when the child left no output.
	LastAssistantMessage []session.Block
}

// Lifecycle event types.
const (
	EventStart           = "subagent/start"
	EventEnd             = "subagent/end"
	EventProviderAdded   = "subagent/provider-added"
	EventProviderRemoved = "subagent/provider-removed"
)

// Lifecycle owns the lifecycle listeners. Every other part of the runtime
// emits through it.
type Lifecycle struct {
	log *slog.Logger

	mu         sync.Mutex
	listeners  []*listener
	publishers []*publisher
}

type listener struct{ fn func(LifecycleEvent) }

type publisher struct{ fn func(LifecycleEvent) error }

// OnLifecycle registers fn for every lifecycle event. fn runs
// synchronously on the goroutine that caused the event; a panic in fn is
// contained and logged. The returned function unregisters it.
func (lc *Lifecycle) OnLifecycle(fn func(LifecycleEvent)) (unsubscribe func()) {
	l := &listener{fn: fn}
	lc.mu.Lock()
	lc.listeners = append(lc.listeners, l)
	lc.mu.Unlock()
	return func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.listeners = slices.DeleteFunc(lc.listeners, func(x *listener) bool { return x == l })
	}
}

// OnPublish registers fn as a publisher of continuable start edges
// (subagent-contract.md §5.7 C8): it runs before the listeners hear the
// edge, on the goroutine that starts the epoch, and an error or a panic
// from it fails the publication. The start (or cold resume) is then
// rolled back with START_PUBLICATION_FAILED: the listeners never hear the
// start and no subagent/end is emitted for it. Unlike a listener's, a
// publisher's failure is not contained: it is where a host makes the
// child known (for example, records it), so a child it could not make
// known must not run. The returned function unregisters it.
func (lc *Lifecycle) OnPublish(fn func(LifecycleEvent) error) (unsubscribe func()) {
	p := &publisher{fn: fn}
	lc.mu.Lock()
	lc.publishers = append(lc.publishers, p)
	lc.mu.Unlock()
	return func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.publishers = slices.DeleteFunc(lc.publishers, func(x *publisher) bool { return x == p })
	}
}

// publish runs the publishers of ev in registration order and stops at
// the first failure (a panic counts as one).
func (lc *Lifecycle) publish(ev LifecycleEvent) error {
	lc.mu.Lock()
	ps := slices.Clone(lc.publishers)
	lc.mu.Unlock()
	for _, p := range ps {
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("publisher panicked: %v", r)
				}
			}()
			return p.fn(ev)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

func (lc *Lifecycle) emit(ev LifecycleEvent) {
	lc.mu.Lock()
	ls := slices.Clone(lc.listeners)
	lc.mu.Unlock()
	for _, l := range ls {
		func() {
			defer func() {
				if p := recover(); p != nil {
					lc.log.Warn(fmt.Sprintf("subagent: %s listener threw: %v", ev.Type, p))
				}
			}()
			l.fn(ev)
		}()
	}
}
