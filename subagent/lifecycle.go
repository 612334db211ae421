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

	mu        sync.Mutex
	listeners []*listener
}

type listener struct{ fn func(LifecycleEvent) }

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
