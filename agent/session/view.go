package session

// This file defines the session's bounded memory: the part of its log a
// live session keeps in memory, and how the rest is read back. A session
// of a store whose persister can read its files back (Reader) keeps only
// the events not yet written to its file plus a small recent tail; older
// events are evicted and every reader of the whole log (Events,
// EventsView) gets them from storage. The log on disk is the authority,
// so nothing is lost by eviction, only read again when needed.

import "fmt"

// Reader is implemented by a Persister that can read back what it wrote.
// A session evicts only events its Reader reports readable.
type Reader interface {
	// Readable returns how many events of session id, from seq 0, are in
	// its file (written, if not yet fsynced): those can be read back.
	Readable(id string) int64
	// ReadEvents returns the events of session id with from <= seq < to,
	// read from its file.
	ReadEvents(id string, from, to int64) ([]Event, error)
}

// DefaultResidentBytes is the payload bytes of events a session keeps in
// memory before it evicts what its file holds (see Store.SetResidentBytes).
const DefaultResidentBytes = 64 << 10

// EventsView returns the whole log like Events. While nothing is evicted
// it shares the session's storage instead of copying it (a copy of a 100
// MB log's event slice is about 10 MB, and the load path took several): a
// stable snapshot, since the log is append-only, with its capacity clipped
// so an append to it cannot reach the session's storage. The caller must
// not modify its elements.
func (s *Session) EventsView() ([]Event, error) {
	s.mu.Lock()
	if s.base == 0 {
		defer s.mu.Unlock()
		return s.events[:len(s.events):len(s.events)], nil
	}
	s.mu.Unlock()
	return s.EventsFrom(0)
}

// MustEventsView is EventsView that panics like MustEvents.
func (s *Session) MustEventsView() []Event {
	evs, err := s.EventsView()
	if err != nil {
		panic(err)
	}
	return evs
}

// Resident returns the seq of the first event held in memory: the events
// before it were evicted and are read back from storage on demand.
func (s *Session) Resident() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base
}

// Evict drops from memory every event its file holds, except the last
// event of the log (Last never reads storage). It is a no-op for a session
// whose store has no Reader. Call it when a large log in memory has been
// used (a load's replay); appends evict on their own past the store's
// resident limit.
func (s *Session) Evict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
}

// evictLocked evicts what Evict does. The caller holds s.mu.
func (s *Session) evictLocked() {
	if s.reader == nil || len(s.events) < 2 {
		return
	}
	upTo := min(s.reader.Readable(s.header.ID), s.base+int64(len(s.events))-1)
	n := upTo - s.base
	if n <= 0 {
		return
	}
	// A new array, so the evicted events' payloads can be collected; the
	// old one stays valid for views handed out before.
	kept := make([]Event, len(s.events)-int(n), max(len(s.events)-int(n), 16))
	copy(kept, s.events[n:])
	s.events = kept
	s.base = upTo
	s.resident = 0
	for _, ev := range kept {
		s.resident += len(ev.Data)
	}
}

// checkResidentLocked evicts once the payloads in memory pass the limit.
func (s *Session) checkResidentLocked(added int) {
	if s.reader == nil {
		return
	}
	s.resident += added
	if s.resident > s.limit {
		s.evictLocked()
	}
}

// adoptSession is newSession for a log handed over by its reader (Adopt):
// it keeps the slice instead of copying it. The capacity is clipped, so the
// session's first append moves the log to storage of its own and never
// writes into an array the caller can still see.
func adoptSession(h Header, clock Clock, ids IDSource, events []Event) *Session {
	s := &Session{header: h, clock: clock, ids: ids, events: events[:len(events):len(events)]}
	for _, ev := range events {
		s.resident += len(ev.Data)
	}
	return s
}

// readBackError wraps a failed read of an evicted part of the log.
func readBackError(id string, from, to int64, err error) error {
	return fmt.Errorf("session %s: read back events %d..%d: %w", id, from, to-1, err)
}
