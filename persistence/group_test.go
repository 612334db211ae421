package persistence

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// groupStore opens a store whose fsyncs are counted.
func groupStore(t *testing.T, window time.Duration, bytes int) (*Store, *atomic.Int64) {
	t.Helper()
	var fsyncs atomic.Int64
	ps, err := Open(t.TempDir(), Options{Logger: testLogger(t), GroupWindow: window, GroupBytes: bytes,
		Fault: func(p FaultPoint) {
			if p == FaultFsync {
				fsyncs.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps, &fsyncs
}

func textChunk(t *testing.T, s *session.Session, text string) int64 {
	t.Helper()
	return mustAppend(t, s, session.TypeAssistantChunk, session.AssistantChunkData{Turn: 1, Step: 1,
		Chunk: session.Chunk{Type: session.ChunkText, Text: text}}).Seq
}

// TestSyncSoonGroupCommit: the first chunk after an idle window commits at
// once; later chunks wait and share one fsync, taken when the byte
// threshold is crossed (the window here is too long to end first).
func TestSyncSoonGroupCommit(t *testing.T) {
	ps, fsyncs := groupStore(t, time.Hour, 1024)
	s, err := liveStore(t, ps).Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	base := fsyncs.Load()
	first := textChunk(t, s, "Hello ")
	if err := ps.SyncSoon(t.Context(), id, first); err != nil {
		t.Fatal(err)
	}
	if got := fsyncs.Load() - base; got != 1 || ps.Durable(id) <= first {
		t.Fatalf("first chunk: %d fsyncs, durable %d; want 1 and > %d", got, ps.Durable(id), first)
	}
	second := textChunk(t, s, "world ")
	done := make(chan error, 1)
	go func() { done <- ps.SyncSoon(context.Background(), id, second) }()
	// Below the threshold, inside the window: nothing commits.
	var last int64
	for range 10 {
		last = textChunk(t, s, "x ")
	}
	if got := fsyncs.Load() - base; got != 1 {
		t.Fatalf("%d fsyncs below the byte threshold, want 1", got)
	}
	select {
	case err := <-done:
		t.Fatalf("SyncSoon returned %v before its commit", err)
	default:
	}
	last = textChunk(t, s, strings.Repeat("y", 1100)) // crosses 1 KiB
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ps.SyncSoon(t.Context(), id, last); err != nil {
		t.Fatal(err)
	}
	if got := fsyncs.Load() - base; got != 2 {
		t.Errorf("%d fsyncs for 13 chunks, want 2", got)
	}
	if ps.Durable(id) <= last {
		t.Errorf("durable %d, want > %d", ps.Durable(id), last)
	}
}

// TestSyncSoonWindow: with no byte pressure, a waiter commits when the
// window ends; many waiters of one window share the fsync.
func TestSyncSoonWindow(t *testing.T) {
	ps, fsyncs := groupStore(t, 5*time.Millisecond, 1<<30)
	s, err := liveStore(t, ps).Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := ps.SyncSoon(t.Context(), id, textChunk(t, s, "a ")); err != nil {
		t.Fatal(err)
	}
	base := fsyncs.Load()
	var seqs []int64
	for range 20 {
		seqs = append(seqs, textChunk(t, s, "b "))
	}
	errs := make(chan error, len(seqs))
	for _, seq := range seqs {
		go func() { errs <- ps.SyncSoon(context.Background(), id, seq) }()
	}
	for range seqs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := fsyncs.Load() - base; got < 1 || got > 2 {
		t.Errorf("20 waiters of one window took %d fsyncs, want 1 (2 if the window ended mid-way)", got)
	}
	if ps.Durable(id) <= seqs[len(seqs)-1] {
		t.Errorf("not durable after the window")
	}
}

// TestSyncSoonEnds: a waiter returns ctx's error when ctx ends, nil when the
// session is released (Release fsyncs), and the sticky error after a
// failed fsync.
func TestSyncSoonEnds(t *testing.T) {
	ps, _ := groupStore(t, time.Hour, 1<<30)
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := ps.SyncSoon(t.Context(), id, textChunk(t, s, "a ")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	seq := textChunk(t, s, "b ")
	go func() { done <- ps.SyncSoon(ctx, id, seq) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v, want context.Canceled", err)
	}
	go func() { done <- ps.SyncSoon(context.Background(), id, seq) }()
	if err := ps.Release(id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("wait across Release: %v, want nil", err)
	}
}
