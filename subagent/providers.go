package subagent

// This file defines the registry of drivers ("providers" in
// subagent-contract.md §2.1).

import (
	"slices"
	"sync"

	"github.com/acp-agent/acp-agent/driver"
)

// ProviderRegistry owns the registered drivers, in registration order.
type ProviderRegistry struct {
	lc *Lifecycle

	mu        sync.Mutex
	providers []driver.Driver
}

// RegisterProvider adds p. The returned function removes it again.
func (r *ProviderRegistry) RegisterProvider(p driver.Driver) (unregister func(), err error) {
	r.mu.Lock()
	for _, q := range r.providers {
		if q.Name() == p.Name() {
			r.mu.Unlock()
			return nil, Errorf(CodeDuplicateProvider, "a subagent provider named %q is already registered", p.Name())
		}
	}
	r.providers = append(r.providers, p)
	r.mu.Unlock()
	r.lc.emit(LifecycleEvent{Type: EventProviderAdded, Provider: p.Name()})
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.providers = slices.DeleteFunc(r.providers, func(q driver.Driver) bool { return q == p })
			r.mu.Unlock()
			r.lc.emit(LifecycleEvent{Type: EventProviderRemoved, Provider: p.Name()})
		})
	}, nil
}

// RegisterProviders adds every driver of ps, or none of them. The returned
// function removes them again.
func (r *ProviderRegistry) RegisterProviders(ps ...driver.Driver) (unregister func(), err error) {
	var undo []func()
	unregister = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	for _, p := range ps {
		u, err := r.RegisterProvider(p)
		if err != nil {
			unregister()
			return nil, err
		}
		undo = append(undo, u)
	}
	return unregister, nil
}

// GetProvider returns the driver registered under name.
func (r *ProviderRegistry) GetProvider(name string) (driver.Driver, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.providers {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Providers returns the registered driver names in registration order.
func (r *ProviderRegistry) Providers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.providers))
	for i, p := range r.providers {
		out[i] = p.Name()
	}
	return out
}
