package external

// This file is the Keeper: the one owner of the processes of continuable
// external children between their activations. A continuable child
// settles after each piece of work (its agent closes) and is resumed cold
// by the next message; without a Keeper that would start the command
// again and load its session every time. With one, a settled child's
// healthy process is kept, its external session still open, and the
// child's next activation takes it over: nothing is started, loaded or
// asked again. A kept process is stopped when it stays unused for the
// Keeper's idle time, when it fails, when Drop is called for its child,
// and when the Keeper closes (the agent shuts down).

import (
	"sync"
	"time"
)

// DefaultKeepIdle is how long a Keeper keeps an unused process.
const DefaultKeepIdle = 10 * time.Minute

// Keeper holds the processes of settled continuable external children.
// Safe for concurrent use.
type Keeper struct {
	idle time.Duration

	mu     sync.Mutex
	closed bool
	kept   map[string]*kept // by child session id
	wg     sync.WaitGroup   // stops in flight
}

type kept struct {
	p     *proc
	timer *time.Timer
}

// NewKeeper returns a Keeper that stops a process unused for idle
// (0: DefaultKeepIdle).
func NewKeeper(idle time.Duration) *Keeper {
	if idle <= 0 {
		idle = DefaultKeepIdle
	}
	return &Keeper{idle: idle, kept: map[string]*kept{}}
}

// park keeps p for child id; false when the Keeper is closed (the caller
// stops p). A process kept already for id (cannot happen: one child has
// one activation at a time) is stopped.
func (k *Keeper) park(id string, p *proc) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	if old := k.kept[id]; old != nil {
		old.timer.Stop()
		k.stopLocked(old.p)
	}
	e := &kept{p: p}
	e.timer = time.AfterFunc(k.idle, func() { k.expire(id, e) })
	k.kept[id] = e
	return true
}

// take hands over the process kept for child id when it runs key and is
// healthy; nil otherwise (a failed or different one is stopped).
func (k *Keeper) take(id, key string) *proc {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.kept[id]
	if e == nil {
		return nil
	}
	delete(k.kept, id)
	e.timer.Stop()
	if e.p.key != key || e.p.cause() != nil {
		k.stopLocked(e.p)
		return nil
	}
	return e.p
}

// expire stops e's process when it is still the one kept for id.
func (k *Keeper) expire(id string, e *kept) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept[id] == e {
		delete(k.kept, id)
		k.stopLocked(e.p)
	}
}

// Drop stops the process kept for child id, if any (the child will not
// be resumed).
func (k *Keeper) Drop(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.kept[id]; e != nil {
		delete(k.kept, id)
		e.timer.Stop()
		k.stopLocked(e.p)
	}
}

// Kept returns how many processes are kept.
func (k *Keeper) Kept() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.kept)
}

// stopLocked stops p off the caller's goroutine (a stop waits for the
// process); Close waits for every stop. Caller holds k.mu.
func (k *Keeper) stopLocked(p *proc) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		p.stop()
	}()
}

// Close stops every kept process and waits for them; a process parked
// later is refused (its Child stops it). Idempotent.
func (k *Keeper) Close() error {
	k.mu.Lock()
	k.closed = true
	for id, e := range k.kept {
		delete(k.kept, id)
		e.timer.Stop()
		k.stopLocked(e.p)
	}
	k.mu.Unlock()
	k.wg.Wait()
	return nil
}
