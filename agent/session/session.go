package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrClosed is returned by Append on a session removed from its store.
var ErrClosed = errors.New("session: closed")

// Session is a live session: an immutable header and an append-only event
// log held in memory. It is safe for concurrent use.
type Session struct {
	header Header
	clock  Clock
	ids    IDSource

	mu sync.Mutex // guards the fields below; held while observers run
	// events holds the log from seq base on; the events before base were
	// evicted (Evict) and are read back from storage through reader.
	events    []Event
	base      int64
	reader    Reader
	resident  int // payload bytes of events
	limit     int // resident bytes past which an append evicts
	observers []*observer
	closed    bool
	store     *Store // the store that owns it, for store-level observers
}

type observer struct{ fn func(*Session, Event) }

// AppendOption adjusts an event before it is appended.
type AppendOption func(*Event)

// WithSurface sets the event's surface operation (surface types only).
func WithSurface(op *SurfaceOp) AppendOption { return func(e *Event) { e.SurfaceOp = op } }

// WithSources sets the event's sourceEventSeqs.
func WithSources(seqs ...int64) AppendOption {
	return func(e *Event) { e.SourceEventSeqs = append([]int64(nil), seqs...) }
}

// Ignorable marks the event as skippable by readers that do not know its type.
func Ignorable() AppendOption { return func(e *Event) { e.Ignorable = true } }

func newSession(h Header, clock Clock, ids IDSource, seed []Event) *Session {
	s := &Session{header: h, clock: clock, ids: ids}
	s.events = append(make([]Event, 0, len(seed)+16), seed...)
	for _, ev := range seed {
		s.resident += len(ev.Data)
	}
	return s
}

// Header returns the session's immutable header.
func (s *Session) Header() Header { return s.header }

// ID returns the session id.
func (s *Session) ID() string { return s.header.ID }

// Now returns the current time of the session's clock, epoch milliseconds.
func (s *Session) Now() int64 { return s.clock.Now() }

// NewID mints an id from the session's id source (message ids, call ids,
// child session ids). In scenario mode it is a per-session counter.
func (s *Session) NewID() string { return s.ids.NewID() }

// Len returns the number of events in the log (the next seq).
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.base) + len(s.events)
}

// Events returns the whole log: the events evicted from memory (Evict)
// read back from storage, then a copy of the ones in memory. The events
// themselves are shared and must not be mutated.
func (s *Session) Events() ([]Event, error) { return s.EventsFrom(0) }

// EventsFrom returns the events with seq >= from (see Events).
func (s *Session) EventsFrom(from int) ([]Event, error) { return s.EventsRange(from, math.MaxInt) }

// EventsRange returns the events with from <= seq < to (see Events); to is
// capped at the log's length.
func (s *Session) EventsRange(from, to int) ([]Event, error) {
	s.mu.Lock()
	base, reader := s.base, s.reader
	from, to = max(from, 0), min(to, int(base)+len(s.events))
	if from >= to {
		s.mu.Unlock()
		return nil, nil
	}
	var tail []Event
	if lo, hi := max(int64(from)-base, 0), int64(to)-base; hi > lo {
		tail = s.events[lo:hi:hi]
	}
	s.mu.Unlock()
	if int64(from) >= base {
		return append([]Event(nil), tail...), nil
	}
	end := min(int64(to), base)
	past, err := reader.ReadEvents(s.header.ID, int64(from), end)
	if err == nil && int64(len(past)) != end-int64(from) {
		err = fmt.Errorf("storage returned %d events", len(past))
	}
	if err != nil {
		return nil, readBackError(s.header.ID, int64(from), end, err)
	}
	return append(past, tail...), nil
}

// MustEvents is Events for tests and tools that hold a session whose log
// is in memory or readable: it panics if the evicted prefix cannot be read
// back. Code that serves requests uses Events.
func (s *Session) MustEvents() []Event {
	evs, err := s.Events()
	if err != nil {
		panic(err)
	}
	return evs
}

// MustEventsFrom is EventsFrom that panics like MustEvents.
func (s *Session) MustEventsFrom(from int) []Event {
	evs, err := s.EventsFrom(from)
	if err != nil {
		panic(err)
	}
	return evs
}

// Last returns the last event of the log (false for an empty log). It
// never reads storage: the last event is never evicted.
func (s *Session) Last() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == 0 {
		return Event{}, false
	}
	return s.events[len(s.events)-1], true
}

// Append marshals data and appends one event of type typ, assigning its seq
// and time. Observers see the event before Append returns.
func (s *Session) Append(typ string, data any, opts ...AppendOption) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("session %s: marshal %s payload: %w", s.header.ID, typ, err)
	}
	return s.appendValid(typ, raw, opts...)
}

// AppendRaw appends one event whose payload is already JSON; the payload is
// checked to be valid JSON.
func (s *Session) AppendRaw(typ string, data json.RawMessage, opts ...AppendOption) (Event, error) {
	if !json.Valid(data) {
		return Event{}, &FormatError{Seq: int64(s.Len()), Type: typ, Message: "has no valid JSON data"}
	}
	return s.appendValid(typ, data, opts...)
}

// appendValid appends an event whose payload is known to be valid JSON.
func (s *Session) appendValid(typ string, data json.RawMessage, opts ...AppendOption) (Event, error) {
	ev := Event{Type: typ, Data: data}
	for _, o := range opts {
		o(&ev)
	}
	if SurfaceTypes[typ] && ev.SurfaceOp == nil {
		ev.SurfaceOp = AppendOp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Event{}, fmt.Errorf("session %s: %w", s.header.ID, ErrClosed)
	}
	ev.Seq = s.base + int64(len(s.events))
	ev.Time = s.clock.Now()
	if err := ValidateEvent(ev, ev.Seq); err != nil {
		return Event{}, err
	}
	s.events = append(s.events, ev)
	s.publishLocked(ev)
	s.checkResidentLocked(len(ev.Data))
	return ev, nil
}

func (s *Session) publishLocked(ev Event) {
	if s.store != nil {
		s.store.publish(s, ev)
	}
	for _, o := range s.observers {
		o.fn(s, ev)
	}
}

// Subscribe registers fn to be called synchronously for every event appended
// from now on, in seq order, under the append lock. fn must not append to s.
// The returned function unsubscribes; it is safe to call more than once.
func (s *Session) Subscribe(fn func(*Session, Event)) (unsubscribe func()) {
	o := &observer{fn: fn}
	s.mu.Lock()
	s.observers = append(s.observers, o)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.observers {
			if x == o {
				s.observers = append(s.observers[:i:i], s.observers[i+1:]...)
				return
			}
		}
	}
}

// SubscribeFrom atomically returns the events with seq >= from and registers
// fn for every later event, so a consumer can replay and then follow the log
// without a gap or a duplicate. An evicted part is read back under the
// append lock.
func (s *Session) SubscribeFrom(from int, fn func(*Session, Event)) (past []Event, unsubscribe func(), err error) {
	o := &observer{fn: fn}
	s.mu.Lock()
	from = max(from, 0)
	if int64(from) < s.base {
		if past, err = s.reader.ReadEvents(s.header.ID, int64(from), s.base); err != nil {
			s.mu.Unlock()
			return nil, nil, readBackError(s.header.ID, int64(from), s.base, err)
		}
	}
	if i := max(int64(from)-s.base, 0); i < int64(len(s.events)) {
		past = append(past, s.events[i:]...)
	}
	s.observers = append(s.observers, o)
	s.mu.Unlock()
	return past, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.observers {
			if x == o {
				s.observers = append(s.observers[:i:i], s.observers[i+1:]...)
				return
			}
		}
	}, nil
}

// OpenTurn reports whether the log ends inside a turn: the last turn/start
// or turn/end event is a turn/start.
func OpenTurn(events []Event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case TypeTurnStart:
			return true
		case TypeTurnEnd:
			return false
		}
	}
	return false
}

// LastTurn returns the highest turn number started in events (0 if none).
func LastTurn(events []Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeTurnStart {
			d, err := DecodeData[TurnData](events[i])
			if err == nil {
				return d.Turn
			}
		}
	}
	return 0
}
