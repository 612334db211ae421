package budgets

// This file is the stall watchdog: a running child that shows no model
// output and no tool progress for a while is reported once per stall.

import (
	"sort"
	"sync"
	"time"
)

// DefaultStallAfter is how long a running child may be quiet before it is
// reported stalled.
const DefaultStallAfter = 5 * time.Minute

// Watchdog tracks the last sign of life of running children. The clock is
// injected (tests move it by hand); Sweep is called by its owner's ticker.
// Safe for concurrent use.
type Watchdog struct {
	after time.Duration
	now   func() time.Time

	mu      sync.Mutex
	last    map[string]time.Time
	stalled map[string]bool
}

// NewWatchdog returns a watchdog reporting children quiet for after
// (<= 0: never); now nil uses time.Now.
func NewWatchdog(after time.Duration, now func() time.Time) *Watchdog {
	if now == nil {
		now = time.Now
	}
	return &Watchdog{after: after, now: now, last: map[string]time.Time{}, stalled: map[string]bool{}}
}

// After is the quiet time that makes a stall (0: the watchdog is off).
func (w *Watchdog) After() time.Duration {
	if w == nil || w.after <= 0 {
		return 0
	}
	return w.after
}

// Progress records a sign of life of id (it starts watching id): a model
// chunk, a tool's progress, a turn starting. A stalled child that shows
// life is no longer stalled.
func (w *Watchdog) Progress(id string) {
	if w.After() == 0 {
		return
	}
	w.mu.Lock()
	w.last[id] = w.now()
	delete(w.stalled, id)
	w.mu.Unlock()
}

// Stop stops watching id (it went idle or was released).
func (w *Watchdog) Stop(id string) {
	if w.After() == 0 {
		return
	}
	w.mu.Lock()
	delete(w.last, id)
	delete(w.stalled, id)
	w.mu.Unlock()
}

// Sweep returns the children that became stalled since the last sweep
// (quiet for After or longer), in id order; each stall is returned once.
func (w *Watchdog) Sweep() []string {
	if w.After() == 0 {
		return nil
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, t := range w.last {
		if !w.stalled[id] && now.Sub(t) >= w.after {
			w.stalled[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Stalled reports whether id is stalled now, and since when it was quiet.
func (w *Watchdog) Stalled(id string) (bool, time.Time) {
	if w.After() == 0 {
		return false, time.Time{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stalled[id], w.last[id]
}
