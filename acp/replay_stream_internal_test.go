package acp

import (
	"context"
	"fmt"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
)

// TestStreamedReplayReadsEveryEventInOrder: a replay streamed from a live
// session's log yields its first replayLen events in order, across batch
// boundaries and across the part read back from the file (the session
// keeps nothing it has written), and stops there although the log grew.
func TestStreamedReplayReadsEveryEventInOrder(t *testing.T) {
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	st := session.NewStore(&session.DeterministicSources{Epoch: 1_700_000_000_000})
	t.Cleanup(ps.Attach(st))
	st.SetResidentBytes(0)
	s, err := st.Create(session.Header{ID: "replayed", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*replayBatch + 17
	title := func(i int) session.TitleData {
		return session.TitleData{Title: fmt.Sprintf("title %d", i), Source: session.Source{Kind: "fallback"}}
	}
	for i := range n {
		if _, err := s.Append(session.TypeSessionTitle, title(i)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			if err := ps.Flush(context.Background(), "replayed"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ps.Flush(context.Background(), "replayed"); err != nil {
		t.Fatal(err)
	}
	s.Evict()
	if s.Resident() != n-1 {
		t.Fatalf("resident from %d, want %d: the replay would not read back", s.Resident(), n-1)
	}
	it := item{replayOf: s, replayLen: n}
	if _, err := s.Append(session.TypeSessionTitle, title(n)); err != nil { // past the replay
		t.Fatal(err)
	}
	var seen int64
	err = it.replayed(func(ev session.Event) {
		want, _ := session.DecodeData[session.TitleData](ev)
		if ev.Seq != seen || want.Title != fmt.Sprintf("title %d", seen) {
			t.Fatalf("event %d of the replay is seq %d %q", seen, ev.Seq, want.Title)
		}
		seen++
	})
	if err != nil || seen != n {
		t.Fatalf("replayed %d events, %v; want %d", seen, err, n)
	}
}
