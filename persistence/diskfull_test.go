package persistence

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestWriteFailureIsSticky: an ENOSPC injected at the write seam fails the
// wait of the chunk being committed and of every later one, also after
// the disk has room again and after the session is released (the group
// commit's wait of a released session used to pass); the file holds
// exactly the events durable before the failure, with no partial line;
// holding the session again starts over from that file.
func TestWriteFailureIsSticky(t *testing.T) {
	var full atomic.Bool
	dir := t.TempDir()
	ps, err := Open(dir, Options{Logger: testLogger(t), FaultErr: func(p FaultPoint) error {
		if p == FaultWrite && full.Load() {
			return syscall.ENOSPC
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	st := liveStore(t, ps)
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	ctx := context.Background()
	shown := textChunk(t, s, "shown ")
	if err := ps.SyncSoon(ctx, id, shown); err != nil {
		t.Fatal(err)
	}
	durable := ps.Durable(id)

	full.Store(true)
	lost := textChunk(t, s, "refused ")
	err = ps.SyncSoon(ctx, id, lost)
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) || we.ErrorCode() != CodeWrite || !strings.Contains(err.Error(), we.Path) {
		t.Fatalf("wait on a full disk: %v; want a *WriteError with ENOSPC and the path", err)
	}
	if ps.Err(id) == nil {
		t.Fatal("Err is nil after a failed write")
	}
	full.Store(false) // space freed: the session stays failed
	later := textChunk(t, s, "later ")
	for name, wait := range map[string]func() error{
		"SyncSoon": func() error { return ps.SyncSoon(ctx, id, later) },
		"SyncTo":   func() error { return ps.SyncTo(ctx, id, later) },
		"Flush":    func() error { return ps.Flush(ctx, id) },
	} {
		if err := wait(); !errors.As(err, &we) {
			t.Errorf("%s after the failure: %v; want the sticky *WriteError", name, err)
		}
	}
	// An event durable before the failure still waits successfully.
	if err := ps.SyncSoon(ctx, id, shown); err != nil {
		t.Errorf("wait on an event durable before the failure: %v", err)
	}
	rerr := ps.Release(id)
	if !errors.As(rerr, &we) || we.Unsaved != 2 {
		t.Fatalf("release: %v; want a *WriteError counting 2 unsaved events", rerr)
	}
	for name, wait := range map[string]func() error{
		"SyncSoon": func() error { return ps.SyncSoon(ctx, id, later) },
		"SyncTo":   func() error { return ps.SyncTo(ctx, id, later) },
		"Flush":    func() error { return ps.Flush(ctx, id) },
		"Err":      func() error { return ps.Err(id) },
	} {
		if err := wait(); !errors.As(err, &we) {
			t.Errorf("%s after the failed release: %v; want the *WriteError", name, err)
		}
	}
	st.Remove(id)

	snap, err := ps.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(snap.Events)) != durable {
		t.Fatalf("file holds %d events, want the %d durable before the failure", len(snap.Events), durable)
	}
	if _, err := ps.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := ps.Err(id); err != nil {
		t.Fatalf("Err after holding the session again: %v", err)
	}
	if err := ps.Release(id); err != nil {
		t.Fatal(err)
	}
}
