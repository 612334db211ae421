package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"33333333-3333-4333-8333-333333333333", true},
		{"parent", true},
		{"session-1", true},
		{"", false},
		{".", false},
		{"..", false},
		{"../etc", false},
		{"a/b", false},
		{`a\b`, false},
		{"a\x00b", false},
		{".hidden", false},
		{"c:", false},
		{strings.Repeat("x", MaxIDLength+1), false},
		{string([]byte{0xff, 0xfe}), false},
	}
	for _, tt := range tests {
		err := ValidateID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) error %v does not wrap ErrInvalidID", tt.id, err)
		}
	}
}

func TestHeaderLineRoundTrip(t *testing.T) {
	h := Header{ID: "child", CreatedAt: 7, Cwd: "/work", ParentSession: "parent", SeedLength: 4, Origin: OriginSubagent, DelegationDepth: 1}
	line, err := MarshalHeaderLine(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"session","version":0,"id":"child","createdAt":7,"cwd":"/work","parentSession":"parent","seedLength":4,"origin":"subagent","delegationDepth":1}`
	if string(line) != want {
		t.Fatalf("header line\n got %s\nwant %s", line, want)
	}
	got, err := ParseHeaderLine(line, "child")
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("round trip: got %+v want %+v", got, h)
	}
	top, _ := MarshalHeaderLine(Header{ID: "top", CreatedAt: 1})
	if string(top) != `{"type":"session","version":0,"id":"top","createdAt":1,"delegationDepth":0}` {
		t.Fatalf("top-level header line %s", top)
	}
}

func TestParseHeaderLineRejects(t *testing.T) {
	tests := []struct {
		name, line, field string
	}{
		{"not json", `nope`, ""},
		{"null", `null`, ""},
		{"array", `[1]`, ""},
		{"wrong type", `{"type":"event","version":0,"id":"a","createdAt":1,"delegationDepth":0}`, "type"},
		{"version", `{"type":"session","version":1,"id":"a","createdAt":1,"delegationDepth":0}`, "version"},
		{"missing depth", `{"type":"session","version":0,"id":"a","createdAt":1}`, "delegationDepth"},
		{"negative createdAt", `{"type":"session","version":0,"id":"a","createdAt":-1,"delegationDepth":0}`, "createdAt"},
		{"fractional depth", `{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":1.5}`, "delegationDepth"},
		{"relative cwd", `{"type":"session","version":0,"id":"a","createdAt":1,"cwd":"rel","delegationDepth":0}`, "cwd"},
		{"origin", `{"type":"session","version":0,"id":"a","createdAt":1,"origin":"fork","delegationDepth":0}`, "origin"},
		{"retired", `{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0,"sandboxMode":"x"}`, "sandboxMode"},
		{"unknown", `{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0,"extra":1}`, ""},
		{"hostile id", `{"type":"session","version":0,"id":"../a","createdAt":1,"delegationDepth":0}`, "id"},
		{"id mismatch", `{"type":"session","version":0,"id":"b","createdAt":1,"delegationDepth":0}`, "id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeaderLine([]byte(tt.line), "a")
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("got %v, want *HeaderError", err)
			}
			if tt.field != "" && he.Field != tt.field {
				t.Fatalf("field %q, want %q (%v)", he.Field, tt.field, err)
			}
		})
	}
}

func TestSurfaceOpJSON(t *testing.T) {
	for _, tt := range []struct {
		op   SurfaceOp
		want string
	}{
		{SurfaceOp{}, `"append"`},
		{SurfaceOp{Replace: true, Start: 1, End: 3}, `{"op":"replace","start":1,"end":3}`},
	} {
		b, err := json.Marshal(tt.op)
		if err != nil || string(b) != tt.want {
			t.Fatalf("marshal %+v = %s, %v", tt.op, b, err)
		}
		var back SurfaceOp
		if err := json.Unmarshal(b, &back); err != nil || back != tt.op {
			t.Fatalf("unmarshal %s = %+v, %v", b, back, err)
		}
	}
	for _, bad := range []string{`"prepend"`, `{"op":"replace","start":3,"end":1}`, `{"op":"replace"}`, `7`} {
		var op SurfaceOp
		if err := json.Unmarshal([]byte(bad), &op); err == nil {
			t.Errorf("unmarshal %s: want error", bad)
		}
	}
}

func ev(typ string, seq int64, data string, opts ...AppendOption) Event {
	e := Event{Type: typ, Seq: seq, Time: 1, Data: json.RawMessage(data)}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func TestValidateLog(t *testing.T) {
	user := `{"id":"m","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}`
	tests := []struct {
		name   string
		events []Event
		unsup  bool
		ok     bool
	}{
		{"ok", []Event{ev(TypeTurnStart, 0, `{"turn":1}`), ev(TypeUserMessage, 1, user, WithSurface(AppendOp))}, false, true},
		{"seq gap", []Event{ev(TypeTurnStart, 0, `{"turn":1}`), ev(TypeTurnEnd, 2, `{}`)}, false, false},
		{"surface without op", []Event{ev(TypeUserMessage, 0, user)}, false, false},
		{"log-only with op", []Event{ev(TypeTurnStart, 0, `{"turn":1}`, WithSurface(AppendOp))}, false, false},
		{"unknown required", []Event{ev("future/thing", 0, `{}`)}, true, false},
		{"unknown ignorable", []Event{ev("future/thing", 0, `{}`, Ignorable())}, false, true},
		{"bad data", []Event{ev(TypeTurnStart, 0, `{`)}, false, false},
		{"replace forward", []Event{ev(TypeUserMessage, 0, user, WithSurface(&SurfaceOp{Replace: true, Start: 0, End: 0}))}, false, false},
		{"source ahead", []Event{ev(TypeUserMessage, 0, user, WithSurface(AppendOp), WithSources(3))}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateLog(tt.events)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateLog = %v, want ok=%v", err, tt.ok)
			}
			if got := errors.Is(err, ErrUnsupportedType); got != tt.unsup {
				t.Fatalf("unsupported = %v, want %v (%v)", got, tt.unsup, err)
			}
		})
	}
}

func msg(text string) Message {
	return Message{ID: text, Role: RoleUser, Content: []Block{Text(text)}, Source: Source{Kind: SourceUser}}
}

func TestHistoryCompactionReplacesRange(t *testing.T) {
	st := NewStore(&DeterministicSources{})
	s, err := st.Create(Header{ID: "h"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := s.Append(TypeUserMessage, msg(text)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(TypeUserMessage, msg("summary of one and two"), WithSurface(&SurfaceOp{Replace: true, Start: 0, End: 1}), WithSources(0, 1)); err != nil {
		t.Fatal(err)
	}
	h, err := History(s.MustEvents())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range h {
		got = append(got, JoinText(m.Message.Content, ""))
	}
	want := []string{"summary of one and two", "three"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("history %q, want %q", got, want)
	}
	if s.Len() != 4 {
		t.Fatalf("compaction must not delete log events: len %d", s.Len())
	}
}

func TestStoreForkRules(t *testing.T) {
	st := NewStore(&DeterministicSources{})
	src, _ := st.Create(Header{ID: "src", Cwd: "/w"}, CreateOptions{})
	src.Append(TypeTurnStart, TurnData{Turn: 1})
	src.Append(TypeUserMessage, msg("task"))
	if _, err := st.Fork("src", ForkOptions{Boundary: -1}); !errors.Is(err, &StoreError{Code: CodeOpenTurn}) {
		t.Fatalf("fork inside open turn: %v", err)
	}
	src.Append(TypeTurnEnd, TurnEndData{Turn: 1, Reason: TurnEndReason{Kind: TurnEndCompleted}})
	if _, err := st.Fork("nope", ForkOptions{Boundary: -1}); !errors.Is(err, &StoreError{Code: CodeNotLive}) {
		t.Fatalf("fork of absent: %v", err)
	}
	if _, err := st.Fork("src", ForkOptions{Boundary: 9}); !errors.Is(err, &StoreError{Code: CodeInvalidBoundary}) {
		t.Fatalf("bad boundary: %v", err)
	}
	child, err := st.Fork("src", ForkOptions{Boundary: -1, ChildID: "kid"})
	if err != nil {
		t.Fatal(err)
	}
	h := child.Header()
	if h.ParentSession != "src" || h.SeedLength != 3 || h.Cwd != "/w" || h.Origin != "" {
		t.Fatalf("fork header %+v", h)
	}
	evs := child.MustEvents()
	if len(evs) != 4 || evs[3].Type != TypeEndSeed {
		t.Fatalf("fork log %v", evs)
	}
	if _, err := st.Fork("src", ForkOptions{Boundary: -1, ChildID: "kid"}); !errors.Is(err, &StoreError{Code: CodeAlreadyExists}) {
		t.Fatalf("duplicate child: %v", err)
	}
}

func TestObserversSeeTotalOrder(t *testing.T) {
	st := NewStore(nil)
	var mu sync.Mutex
	var seen []int64
	st.Observe(&Observer{Appended: func(_ *Session, e Event) {
		mu.Lock()
		seen = append(seen, e.Seq)
		mu.Unlock()
	}})
	s, _ := st.Create(Header{ID: "o"}, CreateOptions{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := s.Append(TypeSessionTitle, TitleData{Title: "x"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i, seq := range seen {
		if seq != int64(i) {
			t.Fatalf("observer saw seq %d at position %d", seq, i)
		}
	}
	if err := st.Remove("o"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(TypeSessionTitle, TitleData{Title: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after remove: %v", err)
	}
}

func TestDeterministicSourcesArePerSession(t *testing.T) {
	a := &DeterministicSources{Epoch: 1000}
	b := &DeterministicSources{Epoch: 1000}
	// Interleave differently: per-session results must not depend on order.
	ca, ia := a.For("x")
	cb, ib := b.For("y")
	_, _ = cb.Now(), ib.NewID()
	first := []string{ia.NewID(), ia.NewID()}
	t1 := ca.Now()
	cx, ix := b.For("x")
	second := []string{ix.NewID(), ix.NewID()}
	t2 := cx.Now()
	if first[0] != second[0] || first[1] != second[1] || t1 != t2 {
		t.Fatalf("per-session sources differ: %v %v %d %d", first, second, t1, t2)
	}
	if first[0] == first[1] {
		t.Fatal("ids repeat")
	}
	if err := ValidateID(first[0]); err != nil || len(first[0]) != 36 {
		t.Fatalf("id %q: %v", first[0], err)
	}
	a.Resume("x", 10)
	if got := ca.Now(); got <= t1 || got != 1000+11*1000 {
		t.Fatalf("resume did not advance the clock: %d", got)
	}
}

func TestAppendRawRejectsInvalidJSON(t *testing.T) {
	st := NewStore(nil)
	s, _ := st.Create(Header{ID: "raw"}, CreateOptions{})
	if _, err := s.AppendRaw(TypeTurnStart, json.RawMessage(`{"turn":`)); err == nil {
		t.Fatal("AppendRaw accepted invalid JSON")
	}
	if s.Len() != 0 {
		t.Fatalf("log grew to %d after a rejected append", s.Len())
	}
	if _, err := s.AppendRaw(TypeTurnStart, json.RawMessage(`{"turn":1}`)); err != nil {
		t.Fatal(err)
	}
}

// takenPersister refuses the first n creations as already existing, like a
// data directory written by a previous deterministic run.
type takenPersister struct{ n int }

func (p *takenPersister) Open(h Header, _ []Event, restored bool) error {
	if !restored && p.n > 0 {
		p.n--
		return fmt.Errorf("create %s: %w", h.ID, ErrExists)
	}
	return nil
}
func (p *takenPersister) Appended(*Session, Event) {}
func (p *takenPersister) Release(string) error     { return nil }

// seenPersister records the seqs it was handed.
type seenPersister struct {
	mu   sync.Mutex
	seqs []int64
}

func (p *seenPersister) Open(Header, []Event, bool) error { return nil }
func (p *seenPersister) Release(string) error             { return nil }
func (p *seenPersister) Appended(_ *Session, ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seqs = append(p.seqs, ev.Seq)
}

func (p *seenPersister) has(seq int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.seqs, seq)
}

// The persister gets every event before any observer or subscriber does,
// so one that asks storage to make the event durable finds it buffered.
func TestPersisterSeesEventsFirst(t *testing.T) {
	st := NewStore(&DeterministicSources{})
	p := &seenPersister{}
	st.SetPersister(p)
	var missed []int64
	st.Observe(&Observer{Appended: func(_ *Session, ev Event) {
		if !p.has(ev.Seq) {
			missed = append(missed, ev.Seq)
		}
	}})
	s, err := st.Create(Header{ID: "s1"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Subscribe(func(_ *Session, ev Event) {
		if !p.has(ev.Seq) {
			missed = append(missed, ev.Seq)
		}
	})
	for range 3 {
		if _, err := s.Append(TypeTurnStart, TurnData{Turn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if len(missed) > 0 || len(p.seqs) != 3 {
		t.Fatalf("observers saw %v before the persister; persister saw %v", missed, p.seqs)
	}
}

func TestCreateMintsAnotherIDWhenTakenOnDisk(t *testing.T) {
	st := NewStore(&DeterministicSources{})
	st.SetPersister(&takenPersister{n: 2})
	s, err := st.Create(Header{}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := HashID("session", 3); s.ID() != want {
		t.Fatalf("id %s, want the third minted id %s", s.ID(), want)
	}
	st.SetPersister(&takenPersister{n: 1})
	if _, err := st.Create(Header{ID: "explicit"}, CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("explicit id taken on disk: %v, want ErrExists (no retry)", err)
	}
}

// countingPersister counts opens and releases per id and is slow to open,
// so concurrent adoptions of one id overlap.
type countingPersister struct {
	mu              sync.Mutex
	opens, releases int
}

func (p *countingPersister) Open(Header, []Event, bool) error {
	p.mu.Lock()
	p.opens++
	p.mu.Unlock()
	return nil
}

func (p *countingPersister) Appended(*Session, Event) {}

func (p *countingPersister) Release(string) error {
	p.mu.Lock()
	p.releases++
	p.mu.Unlock()
	return nil
}

func TestConcurrentAdoptOfOneIDOpensItOnce(t *testing.T) {
	for range 50 {
		st := NewStore(nil)
		p := &countingPersister{}
		st.SetPersister(p)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for range 4 {
			wg.Go(func() {
				if _, err := st.Adopt(Header{ID: "same", CreatedAt: 1}, nil); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, ErrExists) {
					t.Errorf("losing adopt: %v, want an already-exists error", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || p.opens != 1 || p.releases != 0 {
			t.Fatalf("wins=%d opens=%d releases=%d, want 1 1 0", wins, p.opens, p.releases)
		}
	}
}
