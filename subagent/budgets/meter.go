package budgets

// This file is the tree meter: what each session of a root session's
// tree has spent, as its own counter last reported it, so a tree limit
// is checked against the sum without reading any log.

import (
	"sync"

	"github.com/acp-agent/acp-agent/agent/budget"
)

// Meter sums the usage of the trees of root sessions. Each session
// reports its whole own ledger (Set), not a delta, so a report is
// idempotent and the sum is exact for the sessions reported. Safe for
// concurrent use.
type Meter struct {
	prices *budget.Prices
	mu     sync.Mutex
	trees  map[string]map[string]Ledger
}

// NewMeter returns a meter pricing with prices (nil: built-in table).
func NewMeter(prices *budget.Prices) *Meter {
	return &Meter{prices: prices, trees: map[string]map[string]Ledger{}}
}

// Prices returns the meter's prices.
func (m *Meter) Prices() *budget.Prices { return m.prices }

// Set records session's own ledger in root's tree and returns the tree's
// usage.
func (m *Meter) Set(root, session string, l Ledger) budget.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.trees[root]
	if t == nil {
		t = map[string]Ledger{}
		m.trees[root] = t
	}
	t[session] = l
	return m.sumLocked(t)
}

// Seed records a ledger for session only when none is recorded yet (a
// baseline read from a log that a live counter must not overwrite).
func (m *Meter) Seed(root, session string, l Ledger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.trees[root]
	if t == nil {
		t = map[string]Ledger{}
		m.trees[root] = t
	}
	if _, ok := t[session]; !ok {
		t[session] = l
	}
}

// Tree returns the usage of root's tree as reported so far.
func (m *Meter) Tree(root string) budget.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sumLocked(m.trees[root])
}

// Ledgers returns a copy of the ledgers reported for root's tree, by
// session.
func (m *Meter) Ledgers(root string) map[string]Ledger {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Ledger, len(m.trees[root]))
	for id, l := range m.trees[root] {
		out[id] = l
	}
	return out
}

// TreeExcept returns the usage of root's tree without session's own.
func (m *Meter) TreeExcept(root, session string) budget.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	var u budget.Usage
	for id, l := range m.trees[root] {
		if id != session {
			u.Add(l.Usage(m.prices))
		}
	}
	return u
}

func (m *Meter) sumLocked(t map[string]Ledger) budget.Usage {
	var u budget.Usage
	for _, l := range t {
		u.Add(l.Usage(m.prices))
	}
	return u
}
