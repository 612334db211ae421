package agent

// This file defines Registry, the table of live agents.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrAlreadyRegistered is returned (wrapped) by Register when another agent
// holds the id.
var ErrAlreadyRegistered = errors.New("agent: id already registered")

// Registry maps agent ids (session ids) to live agents. The zero value is
// ready to use; it is safe for concurrent use. It does not own the agents:
// closing them is the registrant's job.
type Registry struct {
	mu     sync.RWMutex
	agents map[string]*Agent
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a. Registering the same agent twice is a no-op; another
// agent with the same id is refused with ErrAlreadyRegistered.
func (r *Registry) Register(a *Agent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.agents == nil {
		r.agents = make(map[string]*Agent)
	}
	if cur, ok := r.agents[a.ID()]; ok && cur != a {
		return fmt.Errorf("%w: %q", ErrAlreadyRegistered, a.ID())
	}
	r.agents[a.ID()] = a
	return nil
}

// Get returns the live agent registered under id.
func (r *Registry) Get(id string) (*Agent, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.agents[id]
	return a, ok
}

// Unregister removes a if it is still the agent registered under its id
// (compare-and-delete, so a stale owner cannot remove a successor). It
// reports whether it removed a.
func (r *Registry) Unregister(a *Agent) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.agents[a.ID()]; ok && cur == a {
		delete(r.agents, a.ID())
		return true
	}
	return false
}

// List returns the registered agents ordered by id (byte order).
func (r *Registry) List() []*Agent {
	r.mu.RLock()
	out := make([]*Agent, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(x, y *Agent) int { return strings.Compare(x.ID(), y.ID()) })
	return out
}
