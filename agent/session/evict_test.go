package session

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// memoryFile is a Persister and Reader over an in-memory "file": events
// are written when the test says so (write), like a write-behind buffer.
type memoryFile struct {
	mu      sync.Mutex
	events  map[string][]Event // all appended events
	written map[string]int64   // events written to the "file"
	reads   int                // ReadEvents calls
	fail    error              // ReadEvents fails with it when set
}

func newMemoryFile() *memoryFile {
	return &memoryFile{events: map[string][]Event{}, written: map[string]int64{}}
}

func (m *memoryFile) Open(h Header, seed []Event, restored bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[h.ID] = append([]Event(nil), seed...)
	if restored {
		m.written[h.ID] = int64(len(seed))
	}
	return nil
}

func (m *memoryFile) Appended(s *Session, ev Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[s.ID()] = append(m.events[s.ID()], ev)
}

func (m *memoryFile) Release(string) error { return nil }

func (m *memoryFile) write(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written[id] = int64(len(m.events[id]))
}

func (m *memoryFile) Readable(id string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.written[id]
}

func (m *memoryFile) ReadEvents(id string, from, to int64) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail != nil {
		return nil, m.fail
	}
	if to > m.written[id] {
		return nil, errors.New("not written")
	}
	return append([]Event(nil), m.events[id][from:to]...), nil
}

func payload(n int) map[string]string { return map[string]string{"text": strings.Repeat("x", n)} }

// TestSessionKeepsOnlyWhatItsFileDoesNotHold: past the resident limit an
// append evicts what the file holds (never what is only buffered, never
// the last event), and every reader of the whole log still gets all of it,
// read back from the file.
func TestSessionKeepsOnlyWhatItsFileDoesNotHold(t *testing.T) {
	file := newMemoryFile()
	st := NewStore(nil)
	st.SetPersister(file)
	st.SetResidentBytes(4 << 10)
	s, err := st.Create(Header{ID: "long"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []Event
	add := func(n int) {
		t.Helper()
		ev, err := s.Append(TypeUserMessage, Message{ID: "m", Role: RoleUser, Content: []Block{Text(strings.Repeat("y", n))}, Source: Source{Kind: SourceUser}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	for range 10 {
		add(1 << 10)
	}
	if got := s.Resident(); got != 0 {
		t.Fatalf("evicted up to %d before anything was written", got)
	}
	file.write("long")
	add(1 << 10) // past the limit with 10 events written: evicts them
	if got := s.Resident(); got != 10 {
		t.Fatalf("resident from %d, want 10 (the written events, not the buffered one)", got)
	}
	file.write("long")
	s.Evict()
	if got := s.Resident(); got != 10 {
		t.Fatalf("Evict dropped the last event: resident from %d, want 10", got)
	}
	add(10)
	s.Evict()
	if got := s.Resident(); got != 11 {
		t.Fatalf("resident from %d after Evict, want 11", got)
	}
	if last, ok := s.Last(); !ok || last.Seq != 11 {
		t.Fatalf("Last = %v %v, want seq 11", last.Seq, ok)
	}
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}

	for _, from := range []int{0, 5, 10, 11, 12, 40} {
		got, err := s.EventsFrom(from)
		if err != nil {
			t.Fatalf("EventsFrom(%d): %v", from, err)
		}
		exp := want[min(from, len(want)):]
		if !slices.EqualFunc(got, exp, eventsEqual) {
			t.Fatalf("EventsFrom(%d) = %d events, want %d", from, len(got), len(exp))
		}
	}
	view, err := s.EventsView()
	if err != nil || !slices.EqualFunc(view, want, eventsEqual) {
		t.Fatalf("EventsView = %d events, %v; want %d", len(view), err, len(want))
	}
	var followed []int64
	past, unsub, err := s.SubscribeFrom(3, func(_ *Session, ev Event) { followed = append(followed, ev.Seq) })
	if err != nil {
		t.Fatal(err)
	}
	add(10)
	unsub()
	if len(past) != len(want)-1-3 || past[0].Seq != 3 || !slices.Equal(followed, []int64{int64(len(want) - 1)}) {
		t.Fatalf("SubscribeFrom(3): past %d events from %d, followed %v", len(past), past[0].Seq, followed)
	}
	// The model's view is the same as from the whole log in memory.
	h, err := History(s.MustEvents())
	if err != nil || len(h) != len(want) {
		t.Fatalf("history of %d messages, %v; want %d", len(h), err, len(want))
	}
}

// TestReadBackFailureIsAnError: a log whose evicted part cannot be read
// back gives an error naming the session and the range, not a partial log.
func TestReadBackFailureIsAnError(t *testing.T) {
	file := newMemoryFile()
	st := NewStore(nil)
	st.SetPersister(file)
	st.SetResidentBytes(0)
	s, err := st.Create(Header{ID: "gone"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Append(TypeTurnStart, TurnData{Turn: 1}); err != nil {
			t.Fatal(err)
		}
		file.write("gone")
	}
	if s.Resident() != 2 {
		t.Fatalf("resident from %d, want 2", s.Resident())
	}
	file.fail = errors.New("input/output error")
	for name, read := range map[string]func() ([]Event, error){
		"Events":     s.Events,
		"EventsView": s.EventsView,
		"EventsFrom": func() ([]Event, error) { return s.EventsFrom(1) },
	} {
		evs, err := read()
		if err == nil || !errors.Is(err, file.fail) || !strings.Contains(err.Error(), "session gone") || evs != nil {
			t.Errorf("%s = %d events, %v; want the read-back error", name, len(evs), err)
		}
	}
	if evs, err := s.EventsFrom(2); err != nil || len(evs) != 1 {
		t.Errorf("EventsFrom(2) = %d events, %v: the resident tail needs no read", len(evs), err)
	}
}

// TestNoEvictionWithoutAReader: a store whose persister cannot read back
// keeps every event in memory, whatever the limit.
func TestNoEvictionWithoutAReader(t *testing.T) {
	st := NewStore(nil)
	st.SetResidentBytes(0)
	s, err := st.Create(Header{ID: "mem"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.Append(TypeSessionTitle, payload(1<<10)); err != nil {
			t.Fatal(err)
		}
	}
	s.Evict()
	if s.Resident() != 0 || len(s.MustEvents()) != 5 {
		t.Fatalf("resident from %d with %d events, want everything in memory", s.Resident(), len(s.MustEvents()))
	}
}

// TestEventsRangeAcrossTheEvictedPart: a range is read back where it lies
// before the resident tail, from memory where it lies in it, and capped at
// the log's length.
func TestEventsRangeAcrossTheEvictedPart(t *testing.T) {
	file := newMemoryFile()
	st := NewStore(nil)
	st.SetPersister(file)
	st.SetResidentBytes(0)
	s, err := st.Create(Header{ID: "r"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := s.Append(TypeTurnStart, TurnData{Turn: i + 1}); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			file.write("r")
		}
	}
	if s.Resident() != 6 {
		t.Fatalf("resident from %d, want 6", s.Resident())
	}
	for _, r := range [][2]int{{0, 3}, {2, 8}, {6, 10}, {7, 20}, {9, 10}, {10, 12}, {4, 4}} {
		reads := file.reads
		got, err := s.EventsRange(r[0], r[1])
		if err != nil {
			t.Fatalf("EventsRange(%d, %d): %v", r[0], r[1], err)
		}
		want := max(min(r[1], 10)-r[0], 0)
		if len(got) != want || (want > 0 && got[0].Seq != int64(r[0])) {
			t.Fatalf("EventsRange(%d, %d) = %d events from %v, want %d from %d", r[0], r[1], len(got), got, want, r[0])
		}
		for i, ev := range got {
			if ev.Seq != int64(r[0]+i) {
				t.Fatalf("EventsRange(%d, %d)[%d] has seq %d", r[0], r[1], i, ev.Seq)
			}
		}
		if read := file.reads > reads; read != (r[0] < 6 && want > 0) {
			t.Fatalf("EventsRange(%d, %d) read storage: %v", r[0], r[1], read)
		}
	}
}
