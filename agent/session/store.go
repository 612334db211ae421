package session

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ForkError codes (subagent-contract.md §1.3).
const (
	CodeAlreadyExists   = "SESSION_ALREADY_EXISTS"
	CodeNotFound        = "SESSION_NOT_FOUND"
	CodeNotLive         = "SESSION_NOT_LIVE"
	CodeInvalidBoundary = "INVALID_BOUNDARY"
	CodeOpenTurn        = "OPEN_TURN"
)

// ErrExists is wrapped by a Persister whose durable log for a new session
// already exists (a previous process created it).
var ErrExists = errors.New("session already exists")

// maxMintAttempts bounds the retries of Create when a minted id is taken
// on disk (deterministic ids restart their counter in a new process).
const maxMintAttempts = 1000

// StoreError is a typed failure of the live store.
type StoreError struct {
	Code    string
	Message string
}

func (e *StoreError) Error() string { return e.Message }

// Is matches another *StoreError with the same code; an already-exists
// error also matches ErrExists.
func (e *StoreError) Is(target error) bool {
	if target == ErrExists {
		return e.Code == CodeAlreadyExists
	}
	var t *StoreError
	return errors.As(target, &t) && t.Code == e.Code
}

// Observer receives store-wide notifications. Created is called when a
// session enters the store, with restored=true when its events came from
// durable storage (so a persister must not write them again); Appended for
// every later event, under the session's append lock and in seq order;
// Removed when the session leaves the store. Any field may be nil.
type Observer struct {
	Created  func(s *Session, restored bool)
	Appended func(s *Session, ev Event)
	Removed  func(s *Session)
}

// Persister is the one way from the live store to durable storage
// (implemented by package persistence). Open is called before a session
// becomes visible in the store: for a new session it creates the durable
// log and takes the single-writer lock; for a restored one (restored=true,
// events already durable) it takes the lock unless the caller already
// holds it from a Load. An error aborts Create or Adopt. Appended is called
// for every later event under the session's append lock, in seq order and
// before any observer or subscriber sees it (so one that asks storage to
// make the event durable finds it there); it must only buffer. Release
// flushes what is pending, makes it durable and releases the lock; it is
// called when the session leaves the store.
type Persister interface {
	Open(h Header, seed []Event, restored bool) error
	Appended(s *Session, ev Event)
	Release(id string) error
}

// Store is the live, in-memory session store. It is safe for concurrent use.
type Store struct {
	sources   Sources
	persister Persister
	resident  int // see SetResidentBytes

	mu        sync.RWMutex
	sessions  map[string]*Session
	reserved  map[string]bool // ids being opened by openAndInsert
	observers []*Observer
}

// NewStore returns an empty store whose sessions get their clocks and ids
// from sources (WallSources when nil).
func NewStore(sources Sources) *Store {
	if sources == nil {
		sources = WallSources{}
	}
	return &Store{sources: sources, sessions: make(map[string]*Session), resident: DefaultResidentBytes}
}

// SetResidentBytes sets how many payload bytes of events a session of st
// keeps in memory before an append evicts what its file holds (when the
// persister is a Reader). Call it before the first Create; n <= 0 keeps
// only what is not yet written, and the last event.
func (st *Store) SetResidentBytes(n int) {
	st.mu.Lock()
	st.resident = max(n, 0)
	st.mu.Unlock()
}

// SetPersister attaches durable storage (nil detaches it). Call it before
// the first Create.
func (st *Store) SetPersister(p Persister) {
	st.mu.Lock()
	st.persister = p
	st.mu.Unlock()
}

func (st *Store) currentPersister() Persister {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.persister
}

// Sources returns the store's id and clock sources.
func (st *Store) Sources() Sources { return st.sources }

// Observe registers o for every session of the store. It returns a function
// that unregisters it.
func (st *Store) Observe(o *Observer) (unregister func()) {
	st.mu.Lock()
	st.observers = append(st.observers, o)
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		for i, x := range st.observers {
			if x == o {
				st.observers = append(st.observers[:i:i], st.observers[i+1:]...)
				return
			}
		}
	}
}

// publish hands ev to the persister, then to the observers.
func (st *Store) publish(s *Session, ev Event) {
	st.mu.RLock()
	p := st.persister
	obs := append([]*Observer(nil), st.observers...)
	st.mu.RUnlock()
	if p != nil {
		p.Appended(s, ev)
	}
	for _, o := range obs {
		if o.Appended != nil {
			o.Appended(s, ev)
		}
	}
}

// CreateOptions configure Create.
type CreateOptions struct {
	// Seed events become the first events of the log; they must be
	// contiguous from seq 0. Unless the seed is empty or already ends with
	// session/end-seed, a session/end-seed marker is appended after it.
	Seed []Event
}

// Create adds a new live session with header h. A zero CreatedAt is filled
// from the session's clock and a zero Version is kept (FormatVersion is 0).
func (st *Store) Create(h Header, opts CreateOptions) (*Session, error) {
	if h.ID != "" {
		return st.create(h, opts)
	}
	for range maxMintAttempts {
		h.ID = st.sources.NewSessionID()
		s, err := st.create(h, opts)
		if !errors.Is(err, ErrExists) {
			return s, err
		}
	}
	return nil, fmt.Errorf("session: no free session id after %d attempts: %w", maxMintAttempts, ErrExists)
}

func (st *Store) create(h Header, opts CreateOptions) (*Session, error) {
	clock, ids := st.sources.For(h.ID)
	if h.CreatedAt == 0 {
		h.CreatedAt = clock.Now()
	}
	if err := h.Validate(h.ID); err != nil {
		return nil, err
	}
	for i, ev := range opts.Seed {
		if ev.Seq != int64(i) {
			return nil, fmt.Errorf("seed event at index %d has seq %d (expected %d); seed must be contiguous from 0", i, ev.Seq, i)
		}
	}
	if err := ValidateLog(opts.Seed); err != nil {
		return nil, err
	}
	s := newSession(h, clock, ids, opts.Seed)
	if err := st.openAndInsert(s, opts.Seed, false); err != nil {
		return nil, err
	}
	if n := len(opts.Seed); n > 0 && opts.Seed[n-1].Type != TypeEndSeed {
		if _, err := s.Append(TypeEndSeed, struct{}{}); err != nil {
			st.Remove(s.ID())
			return nil, err
		}
	}
	return s, nil
}

// Adopt makes a session restored from durable storage live again. The
// events are trusted to be a validated log (persistence validated them).
// The session keeps the slice (no copy): the caller must not modify its
// elements afterwards.
func (st *Store) Adopt(h Header, events []Event) (*Session, error) {
	if r, ok := st.sources.(interface{ Resume(string, int) }); ok {
		r.Resume(h.ID, len(events))
	}
	clock, ids := st.sources.For(h.ID)
	s := adoptSession(h, clock, ids, events)
	if err := st.openAndInsert(s, events, true); err != nil {
		return nil, err
	}
	return s, nil
}

func (st *Store) insert(s *Session, restored bool) error {
	st.mu.Lock()
	if _, ok := st.sessions[s.ID()]; ok {
		st.mu.Unlock()
		return &StoreError{CodeAlreadyExists, fmt.Sprintf("session %q already exists", s.ID())}
	}
	s.store = st
	st.sessions[s.ID()] = s
	delete(st.reserved, s.ID())
	obs := append([]*Observer(nil), st.observers...)
	st.mu.Unlock()
	for _, o := range obs {
		if o.Created != nil {
			o.Created(s, restored)
		}
	}
	return nil
}

// openAndInsert opens the durable log first and only then publishes the
// session, so no event can be appended before the persister buffers it.
// The id is reserved for the whole span, so two concurrent creations or
// adoptions of one id cannot both open it (and the loser cannot release
// the winner's durable handle).
func (st *Store) openAndInsert(s *Session, events []Event, restored bool) error {
	id := s.ID()
	st.mu.Lock()
	_, live := st.sessions[id]
	if live || st.reserved[id] {
		st.mu.Unlock()
		return &StoreError{CodeAlreadyExists, fmt.Sprintf("session %q already exists", id)}
	}
	if st.reserved == nil {
		st.reserved = make(map[string]bool)
	}
	st.reserved[id] = true
	st.mu.Unlock()
	unreserve := func() {
		st.mu.Lock()
		delete(st.reserved, id)
		st.mu.Unlock()
	}
	if p := st.currentPersister(); p != nil {
		if err := p.Open(s.header, events, restored); err != nil {
			unreserve()
			return err
		}
		if r, ok := p.(Reader); ok {
			st.mu.RLock()
			s.mu.Lock()
			s.reader, s.limit = r, st.resident
			s.mu.Unlock()
			st.mu.RUnlock()
		}
	}
	if err := st.insert(s, restored); err != nil {
		unreserve()
		return err
	}
	return nil
}

// Get returns the live session id, if any.
func (st *Store) Get(id string) (*Session, bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	s, ok := st.sessions[id]
	return s, ok
}

// List returns the live sessions ordered by (createdAt, id).
func (st *Store) List() []*Session {
	st.mu.RLock()
	out := make([]*Session, 0, len(st.sessions))
	for _, s := range st.sessions {
		out = append(out, s)
	}
	st.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].header, out[j].header
		if a.CreatedAt != b.CreatedAt {
			return a.CreatedAt < b.CreatedAt
		}
		return a.ID < b.ID
	})
	return out
}

// Remove takes a session out of the store; later appends fail with
// ErrClosed. The persister flushes and releases the session; its error is
// returned (the session is removed regardless). Removing an absent id is a
// no-op.
func (st *Store) Remove(id string) error {
	st.mu.Lock()
	s, ok := st.sessions[id]
	if ok {
		delete(st.sessions, id)
	}
	obs := append([]*Observer(nil), st.observers...)
	st.mu.Unlock()
	if !ok {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, o := range obs {
		if o.Removed != nil {
			o.Removed(s)
		}
	}
	if p := st.currentPersister(); p != nil {
		return p.Release(id)
	}
	return nil
}

// ForkOptions configure Fork.
type ForkOptions struct {
	// Boundary is the last seq of the source copied into the seed; -1 means
	// the source's last event.
	Boundary int64
	// ChildID names the new session; empty mints one from the source's ids.
	ChildID string
	// Header fields merged into the child header (ParentSession, Cwd and
	// SeedLength are always set by Fork).
	Header Header
	// Prepare is called with the seed before the child is created and may
	// append more seed events (for example a subagent descriptor).
	Prepare func(seed []Event) []Event
}

// Fork creates a child session seeded with the source's events [0..boundary].
// The prefix must not end inside an open turn. The child header has
// parentSession = source id, the source's cwd, and seedLength = len(prefix)
// when the prefix is not empty (subagent-contract.md §1.3).
func (st *Store) Fork(sourceID string, opts ForkOptions) (*Session, error) {
	src, ok := st.Get(sourceID)
	if !ok {
		return nil, &StoreError{CodeNotLive, fmt.Sprintf("fork source %q is not a live session", sourceID)}
	}
	events, err := src.Events()
	if err != nil {
		return nil, err
	}
	boundary := opts.Boundary
	if boundary < 0 {
		boundary = int64(len(events)) - 1
	}
	if boundary >= int64(len(events)) || boundary < -1 {
		return nil, &StoreError{CodeInvalidBoundary, fmt.Sprintf("fork boundary %d is outside the source log (length %d)", opts.Boundary, len(events))}
	}
	prefix := events[:boundary+1]
	if OpenTurn(prefix) {
		return nil, &StoreError{CodeOpenTurn, fmt.Sprintf("fork boundary %d of %q ends inside an open turn", boundary, sourceID)}
	}
	h := opts.Header
	h.ID = opts.ChildID
	if h.ID == "" {
		h.ID = src.NewID()
	}
	if _, exists := st.Get(h.ID); exists {
		return nil, &StoreError{CodeAlreadyExists, fmt.Sprintf("session %q already exists", h.ID)}
	}
	h.ParentSession = src.ID()
	if h.Cwd == "" {
		h.Cwd = src.header.Cwd
	}
	h.SeedLength = len(prefix)
	seed := append([]Event(nil), prefix...)
	if len(seed) > 0 && seed[len(seed)-1].Type != TypeEndSeed && opts.Prepare != nil {
		seed = append(seed, Event{Type: TypeEndSeed, Seq: int64(len(seed)), Time: seed[len(seed)-1].Time, Data: []byte("{}")})
	}
	if opts.Prepare != nil {
		seed = opts.Prepare(seed)
	}
	if h.CreatedAt == 0 {
		h.CreatedAt = src.Now()
	}
	return st.Create(h, CreateOptions{Seed: seed})
}
