package projection

// This file defines the incremental projection of live sessions: the store
// observer that keeps one fold state per live session and the Snapshot read
// that serves it without replaying the log.

import (
	"encoding/json"
	"sync"

	"github.com/acp-agent/acp-agent/agent/session"
)

// liveState is the fold state of one live session.
type liveState struct {
	store *session.Store // the attached store the session belongs to

	mu sync.Mutex // guards the fields below
	// next is the number of leading events folded into every present fold.
	next int64
	// stale is set when an append arrived out of order (a gap), so the
	// folds must catch up from the session's in-memory events.
	stale bool
	// folds holds one fold per registered unit. A unit registered after
	// the session was first folded is missing until the next catch-up.
	folds map[*entry]*fold
}

type fold struct {
	state any
	err   error // sticky: a failed unit stays failed for this log
	// view caches View(state): units are pure, so a state that did not
	// change renders the same value (or the same failure) again.
	view    json.RawMessage
	viewErr error
	viewed  bool
}

// apply folds ev into f.
func (f *fold) apply(e *entry, ev session.Event) {
	if f.err != nil {
		return
	}
	f.state, f.err = safeApply(e, f.state, ev)
	f.viewed = false
}

// render returns the cached view, rendering it first if needed.
func (f *fold) render(e *entry) (json.RawMessage, error) {
	if f.err != nil {
		return nil, f.err
	}
	if !f.viewed {
		f.view, f.viewErr = safeView(e, f.state)
		f.viewed = true
	}
	return f.view, f.viewErr
}

// Attach makes r observe st: every live session of st (present now or
// created later) gets an incremental fold state, updated on each append and
// dropped when the session leaves the store. The returned function detaches
// r again and drops the states of st's sessions; it is idempotent.
func (r *Registry) Attach(st *session.Store) (detach func()) {
	unobserve := st.Observe(&session.Observer{
		Created: func(s *session.Session, _ bool) {
			// A failed catch-up leaves the folds missing: the next Snapshot
			// tries again and reports the error.
			_ = r.catchUp(r.state(s, st), s)
		},
		Appended: func(s *session.Session, ev session.Event) {
			r.appended(r.state(s, st), ev)
		},
		Removed: func(s *session.Session) {
			r.mu.Lock()
			delete(r.live, s)
			r.mu.Unlock()
		},
	})
	// Sessions that were live before Attach are folded now, from memory.
	for _, s := range st.List() {
		_ = r.catchUp(r.state(s, st), s) // as in Created
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unobserve()
			r.mu.Lock()
			for s, ls := range r.live {
				if ls.store == st {
					delete(r.live, s)
				}
			}
			r.mu.Unlock()
		})
	}
}

// state returns the live state of s, creating an empty one.
func (r *Registry) state(s *session.Session, st *session.Store) *liveState {
	r.mu.RLock()
	ls := r.live[s]
	r.mu.RUnlock()
	if ls != nil {
		return ls
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ls = r.live[s]; ls == nil {
		ls = &liveState{store: st, folds: make(map[*entry]*fold)}
		r.live[s] = ls
	}
	return ls
}

// appended folds one newly appended event. It runs under the session's
// append lock, so it never calls back into the session: an event that does
// not directly follow the folded prefix only marks the state stale.
func (r *Registry) appended(ls *liveState, ev session.Event) {
	units := r.registered()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ev.Seq != ls.next {
		if ev.Seq > ls.next {
			ls.stale = true
		}
		return // an event already folded during a catch-up
	}
	if ls.stale {
		return
	}
	for _, e := range units {
		if f := ls.folds[e]; f != nil {
			f.apply(e, ev)
		}
	}
	ls.next++
}

// catchUp brings every registered unit of ls up to date with the session's
// log (from memory, or read back where it was evicted). It must not be
// called under the session's append lock.
func (r *Registry) catchUp(ls *liveState, s *session.Session) error {
	for {
		units := r.registered()
		ls.mu.Lock()
		if ls.current(units) {
			ls.mu.Unlock()
			return nil
		}
		ls.mu.Unlock()

		events, err := s.EventsView() // read only
		if err != nil {
			return err
		}
		ls.mu.Lock()
		if int64(len(events)) < ls.next {
			// Appends raced ahead of the view; take a fresh one.
			ls.mu.Unlock()
			continue
		}
		for _, e := range units {
			if ls.folds[e] != nil {
				continue
			}
			f := &fold{}
			f.state, f.err = safeInit(e)
			for _, ev := range events[:ls.next] {
				if f.err != nil {
					break
				}
				f.apply(e, ev)
			}
			ls.folds[e] = f
		}
		for _, ev := range events[ls.next:] {
			for _, e := range units {
				ls.folds[e].apply(e, ev)
			}
		}
		ls.next = int64(len(events))
		ls.stale = false
		ls.mu.Unlock()
	}
}

// current reports whether ls has a fold for every unit and no gap.
func (ls *liveState) current(units []*entry) bool {
	if ls.stale {
		return false
	}
	for _, e := range units {
		if ls.folds[e] == nil {
			return false
		}
	}
	return true
}

// Snapshot returns the projected values of the live session s. For a
// session of an attached store it is served from the incremental fold state
// (no log read, no replay); for any other session it folds the session's
// in-memory events. A unit that failed on this log makes Snapshot return its
// *UnitError; other sessions are unaffected.
func (r *Registry) Snapshot(s *session.Session) (Snapshot, error) {
	snap, _, err := r.snapshot(s)
	return snap, err
}

// LiveValues is Snapshot in plain types, with the stateVersion of every
// unit whose value is returned. It lets derived stores (the projection
// cache) checkpoint live values without importing this package.
func (r *Registry) LiveValues(s *session.Session) (asOfSeq int64, values map[string]json.RawMessage, versions map[string]int, err error) {
	snap, versions, err := r.snapshot(s)
	if err != nil {
		return 0, nil, nil, err
	}
	return snap.AsOfSeq, snap.Values, versions, nil
}

func (r *Registry) snapshot(s *session.Session) (Snapshot, map[string]int, error) {
	r.mu.RLock()
	ls := r.live[s]
	r.mu.RUnlock()
	if ls == nil {
		units := r.registered()
		events, err := s.Events()
		if err != nil {
			return Snapshot{}, nil, err
		}
		snap, err := r.Restore(events)
		if err != nil {
			return Snapshot{}, nil, err
		}
		return snap, versionsOf(units), nil
	}
	for {
		if err := r.catchUp(ls, s); err != nil {
			return Snapshot{}, nil, err
		}
		units := r.registered()
		ls.mu.Lock()
		if !ls.current(units) {
			ls.mu.Unlock()
			continue // a unit was registered meanwhile
		}
		snap := Snapshot{AsOfSeq: ls.next - 1, Values: make(map[string]json.RawMessage, len(units))}
		var failed error
		for _, e := range units {
			v, err := ls.folds[e].render(e)
			if err != nil {
				failed = err
				break
			}
			snap.Values[e.key] = v
		}
		ls.mu.Unlock()
		if failed != nil {
			return Snapshot{}, nil, failed
		}
		return snap, versionsOf(units), nil
	}
}

func versionsOf(units []*entry) map[string]int {
	out := make(map[string]int, len(units))
	for _, e := range units {
		out[e.key] = e.version
	}
	return out
}
