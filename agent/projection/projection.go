package projection

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Unit is one projection: a pure, synchronous fold over a session's events.
//
// Init returns the empty state; Apply returns the state after one more event
// (uninteresting events return the state unchanged); View renders a state as
// a JSON-serializable value (nil renders as a present null). StateVersion
// changes whenever the meaning of a unit's value changes, so persisted
// checkpoints of an older version are never trusted. Key names the value in
// a Snapshot. An error or a panic from Apply or View poisons the unit for
// that one log only. See subagent-contract.md §1.5.
type Unit interface {
	Key() string
	StateVersion() int
	Init() any
	Apply(state any, ev session.Event) (any, error)
	View(state any) (any, error)
}

// Fold adapts typed functions into a Unit, so a unit's state keeps its Go
// type. A nil Step leaves the state unchanged; a nil Render views the state
// itself.
type Fold[S any] struct {
	Name    string
	Version int
	Initial func() S
	Step    func(state S, ev session.Event) (S, error)
	Render  func(state S) (any, error)
}

var _ Unit = Fold[int]{}

// Key returns f.Name.
func (f Fold[S]) Key() string { return f.Name }

// StateVersion returns f.Version.
func (f Fold[S]) StateVersion() int { return f.Version }

// Init returns f.Initial() (the zero S when Initial is nil).
func (f Fold[S]) Init() any {
	if f.Initial == nil {
		var zero S
		return zero
	}
	return f.Initial()
}

// Apply advances a state of type S by one event.
func (f Fold[S]) Apply(state any, ev session.Event) (any, error) {
	s, ok := state.(S)
	if !ok {
		return nil, fmt.Errorf("projection %q: state has type %T", f.Name, state)
	}
	if f.Step == nil {
		return s, nil
	}
	return f.Step(s, ev)
}

// View renders a state of type S.
func (f Fold[S]) View(state any) (any, error) {
	s, ok := state.(S)
	if !ok {
		return nil, fmt.Errorf("projection %q: state has type %T", f.Name, state)
	}
	if f.Render == nil {
		return s, nil
	}
	return f.Render(s)
}

// Snapshot is the projected view of one log: AsOfSeq is the seq of the last
// event folded (-1 for an empty log) and Values maps each registered unit's
// key to its JSON view. A unit with no value has a present null. Values may
// be shared with other snapshots of the same live state: never modify them.
type Snapshot struct {
	AsOfSeq int64
	Values  map[string]json.RawMessage
}

// UnitError reports a unit that failed (returned an error or panicked) on
// one log. Seq is the event being applied, or -1 when View failed.
type UnitError struct {
	Key string
	Seq int64
	Err error
}

func (e *UnitError) Error() string {
	if e.Seq < 0 {
		return fmt.Sprintf("projection %q: view failed: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("projection %q: fold failed at seq %d: %v", e.Key, e.Seq, e.Err)
}

func (e *UnitError) Unwrap() error { return e.Err }

// ErrDuplicateKey is wrapped by Register when a unit with the same key is
// already registered.
var ErrDuplicateKey = errors.New("projection: duplicate unit key")

// PanicError carries a recovered unit panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("unit panicked: %v", e.Value) }

// entry is one registration. Live fold states are keyed by *entry, so a
// unit registered again under the same key starts from scratch.
type entry struct {
	unit    Unit
	key     string
	version int
}

// Registry holds the registered units and the incremental fold state of
// every live session of the attached stores. The zero value is not usable;
// call New. It is safe for concurrent use.
type Registry struct {
	// units is the registration-ordered unit list. It is replaced, never
	// mutated, under mu, so the append path reads it without locking.
	units atomic.Pointer[[]*entry]

	mu   sync.RWMutex // guards live and serializes unit list changes
	live map[*session.Session]*liveState
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{live: make(map[*session.Session]*liveState)}
}

// Register adds u. The returned function removes it again (idempotent).
// Keys are unique: registering a second unit under a taken key fails with an
// error wrapping ErrDuplicateKey. Live sessions fold the new unit lazily, on
// their next Snapshot, from their in-memory events.
func (r *Registry) Register(u Unit) (unregister func(), err error) {
	if u == nil {
		return nil, errors.New("projection: nil unit")
	}
	e := &entry{unit: u, key: u.Key(), version: u.StateVersion()}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.registered()
	for _, x := range cur {
		if x.key == e.key {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateKey, e.key)
		}
	}
	next := append(cur[:len(cur):len(cur)], e)
	r.units.Store(&next)
	var once sync.Once
	return func() { once.Do(func() { r.unregister(e) }) }, nil
}

func (r *Registry) unregister(e *entry) {
	r.mu.Lock()
	cur := r.registered()
	for i, x := range cur {
		if x == e {
			next := append(cur[:i:i], cur[i+1:]...)
			r.units.Store(&next)
			break
		}
	}
	states := make([]*liveState, 0, len(r.live))
	for _, ls := range r.live {
		states = append(states, ls)
	}
	r.mu.Unlock()
	for _, ls := range states {
		ls.mu.Lock()
		delete(ls.folds, e)
		ls.mu.Unlock()
	}
}

// Versions returns the stateVersion of every registered unit by key.
func (r *Registry) Versions() map[string]int {
	units := r.registered()
	out := make(map[string]int, len(units))
	for _, e := range units {
		out[e.key] = e.version
	}
	return out
}

// registered returns the current unit list; callers must not modify it.
func (r *Registry) registered() []*entry {
	if p := r.units.Load(); p != nil {
		return *p
	}
	return nil
}

// Restore folds every registered unit from Init over events (a cold log)
// and returns the resulting snapshot. Any unit failure is returned as a
// *UnitError; no partial snapshot is returned.
func (r *Registry) Restore(events []session.Event) (Snapshot, error) {
	units := r.registered()
	states := make([]any, len(units))
	for i, e := range units {
		st, err := safeInit(e)
		if err != nil {
			return Snapshot{}, err
		}
		states[i] = st
	}
	for _, ev := range events {
		for i, e := range units {
			st, err := safeApply(e, states[i], ev)
			if err != nil {
				return Snapshot{}, err
			}
			states[i] = st
		}
	}
	snap := Snapshot{AsOfSeq: int64(len(events)) - 1, Values: make(map[string]json.RawMessage, len(units))}
	for i, e := range units {
		v, err := safeView(e, states[i])
		if err != nil {
			return Snapshot{}, err
		}
		snap.Values[e.key] = v
	}
	return snap, nil
}

func safeInit(e *entry) (st any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &UnitError{Key: e.key, Seq: -1, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	return e.unit.Init(), nil
}

func safeApply(e *entry, st any, ev session.Event) (next any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &UnitError{Key: e.key, Seq: ev.Seq, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	next, err = e.unit.Apply(st, ev)
	if err != nil {
		return nil, &UnitError{Key: e.key, Seq: ev.Seq, Err: err}
	}
	return next, nil
}

func safeView(e *entry, st any) (raw json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &UnitError{Key: e.key, Seq: -1, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	v, err := e.unit.View(st)
	if err != nil {
		return nil, &UnitError{Key: e.key, Seq: -1, Err: err}
	}
	if raw, ok := v.(json.RawMessage); ok && raw != nil {
		if !json.Valid(raw) {
			return nil, &UnitError{Key: e.key, Seq: -1, Err: errors.New("view is not valid JSON")}
		}
		return raw, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &UnitError{Key: e.key, Seq: -1, Err: err}
	}
	return b, nil
}
