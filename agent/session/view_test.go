package session

import (
	"slices"
	"testing"
)

// TestEventsViewIsAStableSnapshot: the view shares the session's storage,
// so later appends to the session must not show in it, and an append to
// the view must not reach the session.
func TestEventsViewIsAStableSnapshot(t *testing.T) {
	st := NewStore(nil)
	s, err := st.Create(Header{ID: "v"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for turn := 1; turn <= 3; turn++ {
		if _, err := s.Append(TypeTurnStart, TurnData{Turn: turn}); err != nil {
			t.Fatal(err)
		}
	}
	view := s.MustEventsView()
	want := s.MustEvents()
	if !slices.EqualFunc(view, want, eventsEqual) {
		t.Fatalf("view %v, want %v", view, want)
	}
	if _, err := s.Append(TypeTurnStart, TurnData{Turn: 4}); err != nil {
		t.Fatal(err)
	}
	// An append to the view must reallocate, never write over the event
	// the session appended after it.
	_ = append(view, Event{Type: "foreign", Seq: int64(len(view))})
	for turn := 5; turn <= 40; turn++ {
		if _, err := s.Append(TypeTurnStart, TurnData{Turn: turn}); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.EqualFunc(view, want, eventsEqual) {
		t.Fatalf("view changed by later appends: %v, want %v", view, want)
	}
	all := s.MustEvents()
	if len(all) != len(want)+37 {
		t.Fatalf("session has %d events, want %d", len(all), len(want)+37)
	}
	for i, ev := range all {
		if ev.Type != TypeTurnStart || ev.Seq != int64(i) {
			t.Fatalf("event %d = %s seq %d: the view's append reached the session", i, ev.Type, ev.Seq)
		}
	}
}

// TestAdoptDoesNotWriteIntoTheCallersSlice: Adopt keeps the caller's slice
// instead of copying it; the session's appends must still go to storage
// of its own, even when the slice has spare capacity (persistence presizes
// it), so two adoptions of one slice cannot overwrite each other.
func TestAdoptDoesNotWriteIntoTheCallersSlice(t *testing.T) {
	src, err := NewStore(nil).Create(Header{ID: "a", CreatedAt: 1}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Append(TypeTurnStart, TurnData{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	loaded := append(make([]Event, 0, 64), src.MustEvents()...)
	n := len(loaded)
	var sessions []*Session
	for range 2 {
		s, err := NewStore(nil).Adopt(src.Header(), loaded)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	if _, err := sessions[0].Append(TypeTurnEnd, TurnEndData{Turn: 1, Reason: TurnEndReason{Kind: TurnEndCompleted}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions[1].Append(TypeTurnStart, TurnData{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if spare := loaded[n : n+1][0]; spare.Type != "" {
		t.Fatalf("the caller's spare capacity was written: %+v", spare)
	}
	if got := sessions[0].MustEvents()[n].Type; got != TypeTurnEnd {
		t.Fatalf("first session's appended event is %q, want %q", got, TypeTurnEnd)
	}
	if got := sessions[1].MustEvents()[n].Type; got != TypeTurnStart {
		t.Fatalf("second session's appended event is %q, want %q", got, TypeTurnStart)
	}
}

func eventsEqual(a, b Event) bool {
	return a.Type == b.Type && a.Seq == b.Seq && a.Time == b.Time && string(a.Data) == string(b.Data)
}
