package persistence

import (
	"os"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestSyncToWatermark: SyncTo writes and fsyncs up to a seq the watermark
// does not cover, and is free (no write) when it does.
func TestSyncToWatermark(t *testing.T) {
	ps := openStore(t, t.TempDir())
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if got := ps.Durable(id); got != 0 {
		t.Fatalf("Durable of a fresh session = %d, want 0", got)
	}
	call := appendOpenToolTurn(t, s, 1, false)
	if got := ps.Durable(id); got > call {
		t.Fatalf("Durable = %d before any flush, want <= %d", got, call)
	}
	if err := ps.SyncTo(t.Context(), id, call); err != nil {
		t.Fatal(err)
	}
	if got := ps.Durable(id); got != call+1 {
		t.Fatalf("Durable after SyncTo(%d) = %d, want %d", call, got, call+1)
	}
	path := ps.dir + "/" + id + ".jsonl"
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	// Text after the call stays buffered: a covered SyncTo writes nothing.
	mustAppend(t, s, session.TypeStepEnd, session.StepData{Turn: 1, Step: 1})
	if err := ps.SyncTo(t.Context(), id, call); err != nil {
		t.Fatal(err)
	}
	if after := size(); after != before {
		t.Errorf("covered SyncTo wrote %d bytes", after-before)
	}
	if err := ps.SyncTo(t.Context(), id, call+1); err != nil {
		t.Fatal(err)
	}
	if got := ps.Durable(id); got != call+2 || size() == before {
		t.Errorf("Durable after SyncTo(%d) = %d (size %d→%d), want %d and a write", call+1, got, before, size(), call+2)
	}
	// A session not held is complete on disk.
	if err := ps.SyncTo(t.Context(), "not-held", 5); err != nil {
		t.Errorf("SyncTo of a session not held: %v", err)
	}
}
