package persistence

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Sessions appending concurrently with checkpoints, the background flusher
// and readers: readers in the process never see less than was appended,
// every view is a valid log, and everything reads back after Close.
func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	ps, err := Open(dir, Options{Logger: testLogger(t), FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st := liveStore(t, ps)
	ctx, cancel := context.WithCancel(t.Context())
	var flusher sync.WaitGroup
	flusher.Go(func() {
		if err := ps.Run(ctx); err != nil {
			t.Error(err)
		}
	})

	var sessions []*session.Session
	for i := range 4 {
		s, err := st.Create(session.Header{ID: fmt.Sprintf("s%d", i)}, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			for turn := 1; turn <= 20; turn++ {
				appendToolTurn(t, s, turn)
				if turn%3 == 0 {
					if err := ps.Flush(t.Context(), s.ID()); err != nil {
						t.Error(err)
					}
				}
			}
		})
		wg.Go(func() {
			for range 50 {
				n := s.Len()
				snap, err := ps.Inspect(t.Context(), s.ID())
				if err != nil {
					t.Error(err)
					return
				}
				if len(snap.Events) < n {
					t.Errorf("%s: Inspect saw %d events after %d were appended", s.ID(), len(snap.Events), n)
				}
				if err := session.ValidateLog(snap.Events); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := ps.List(t.Context()); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	cancel()
	flusher.Wait()
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t, dir)
	for _, s := range sessions {
		got, err := fresh.Inspect(t.Context(), s.ID())
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, got.Events, s.MustEvents())
	}
}
