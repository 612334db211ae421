package session

// This file defines the copy-free view of a session's log, for readers of
// a large log (a session/load replay, the folds that catch up on it): a
// copy of a 100 MB log's event slice is about 10 MB, and the load path
// took several, which set the load's peak memory.

// EventsView returns the log's events as a slice that shares the
// session's storage instead of copying it. It is a stable snapshot: the
// log is append-only, so the elements it covers are never written again,
// and its capacity is clipped, so an append to it cannot reach the
// session's storage. The caller must not modify its elements; use Events
// for a slice to own.
func (s *Session) EventsView() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[:len(s.events):len(s.events)]
}

// adoptSession is newSession for a log handed over by its reader (Adopt):
// it keeps the slice instead of copying it. The capacity is clipped, so the
// session's first append moves the log to storage of its own and never
// writes into an array the caller can still see.
func adoptSession(h Header, clock Clock, ids IDSource, events []Event) *Session {
	return &Session{header: h, clock: clock, ids: ids, events: events[:len(events):len(events)]}
}
