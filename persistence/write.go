package persistence

// This file defines the write side: held sessions, the write-behind buffer
// fed by the live session store, checkpoints, and the background flusher.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// handle is a session this Store holds for writing: its file, open for
// append and flocked, and the events appended but not yet written.
type handle struct {
	id     string
	path   string
	header session.Header
	f      *os.File

	// wmu serializes writers of the file (flush, release). Lock order:
	// wmu before mu. Writers drop mu while writing, so appends (which run
	// under the live session's lock) never wait for a write or an fsync.
	wmu sync.Mutex
	buf bytes.Buffer // encoding buffer, guarded by wmu

	mu       sync.Mutex      // guards the fields below
	pending  []session.Event // appended, not yet handed to a writer
	inflight []session.Event // being written by the holder of wmu
	next     int64           // seq the next appended event must have
	written  int64           // bytes of the file written (all valid lines)
	dirty    bool            // written since the last fsync
	wroteSeq int64           // events written to the file (the next written seq)
	syncSeq  int64           // events known durable: written and fsynced
	live     bool            // a live session feeds it (Open was called)
	closed   bool            // released; the file is closed
	err      error           // sticky failure; the session takes no more writes
	refused  int             // events appended after err (never written)

	// rmu guards index, the read-back offsets (readback.go).
	rmu   sync.Mutex
	index readIndex

	// Group commit (group.go): when the last fsync ended, the bytes
	// appended since the last fsync, and the waiters' wake-up channel.
	lastSync     time.Time
	pendingBytes int
	wake         chan struct{}
}

var _ session.Persister = (*Store)(nil)

// Attach makes s the persister of st (session.Persister): new sessions
// are created on disk, restored ones locked, and every appended event is
// buffered in memory (no system call) until the next SyncTo, Flush, Run
// tick or Release. detach undoes it; call it only while no session of st
// is being created.
func (s *Store) Attach(st *session.Store) (detach func()) {
	st.SetPersister(s)
	return sync.OnceFunc(func() { st.SetPersister(nil) })
}

// Appended implements session.Persister. It runs under the session's
// append lock, so it only buffers the event.
func (s *Store) Appended(sess *session.Session, ev session.Event) {
	h, err := s.held(sess.ID())
	if err != nil || h == nil {
		s.log.Debug("event of a session not held for writing", "session_id", sess.ID(), "seq", ev.Seq)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
	case h.err != nil:
		h.refused++ // counted as unsaved at release
	case ev.Seq != h.next:
		h.err = &SeqError{ID: h.id, Want: h.next, Got: ev.Seq}
		s.log.Error("session log out of step", "session_id", h.id, "err", h.err)
	default:
		h.pending = append(h.pending, ev)
		h.next++
		h.pendingBytes += len(ev.Data)
		if h.pendingBytes >= s.groupBytes && h.pendingBytes-len(ev.Data) < s.groupBytes {
			h.wakeAllLocked()
		}
		s.hit(FaultAppend)
	}
}

// flushLocked writes the buffered events of h with one write call and, if
// sync, makes everything written durable. The caller holds h.wmu.
// It is long because the write, the sync and the handling of each's
// failure (sticky error, rollback of the handle's counters, named crash
// points) happen under the same locks and must be read together.
func (s *Store) flushLocked(h *handle, sync bool) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	if h.err != nil {
		h.mu.Unlock()
		return h.err
	}
	batch := h.pending
	h.pending, h.inflight = nil, batch
	// Everything counted so far is written once this batch is: an fsync
	// below covers exactly these bytes.
	coveredBytes := h.pendingBytes
	written, dirty := h.written, h.dirty
	h.mu.Unlock()

	if len(batch) > 0 {
		s.hit(FaultWrite)
		h.buf.Reset()
		err := encodeEvents(&h.buf, batch)
		var n int
		if err == nil && s.faultErr != nil {
			err = s.faultErr(FaultWrite) // an injected ENOSPC (fault tests)
		}
		if err == nil {
			n, err = h.f.Write(h.buf.Bytes())
		}
		if h.buf.Cap() > 1<<20 {
			h.buf = bytes.Buffer{} // do not pin a huge batch's buffer
		}
		if err != nil {
			// Cut a partial line so the file stays a valid log. The failure
			// is sticky: a retry that later succeeds would write events
			// whose display was already refused, and waiters must not
			// pass. The batch stays pending only to be counted as unsaved.
			werr := error(&WriteError{ID: h.id, Path: h.path, Op: "write", Err: err})
			if n > 0 {
				if terr := h.f.Truncate(written); terr != nil {
					werr = errors.Join(werr, fmt.Errorf("persistence: cut the partial line of %s: %w", h.path, terr))
				}
			}
			h.mu.Lock()
			h.pending, h.inflight = append(batch, h.pending...), nil
			h.err = werr
			h.wakeAllLocked()
			h.mu.Unlock()
			s.log.Error("session log write failed: nothing more of the session is saved or shown", "session_id", h.id, "path", h.path, "err", err)
			return werr
		}
		h.mu.Lock()
		h.written += int64(n)
		h.wroteSeq += int64(len(batch))
		h.inflight = nil
		h.dirty = true
		h.mu.Unlock()
		dirty = true
	}
	if sync && dirty {
		// wmu is held: nothing else writes until the fsync returns, so
		// every event written so far is covered by it.
		h.mu.Lock()
		covered := h.wroteSeq
		h.mu.Unlock()
		if err := s.sync(h.f); err != nil {
			// After a failed fsync the page cache state is unknown
			// (fsyncgate): stop writing rather than pretend.
			err = &WriteError{ID: h.id, Path: h.path, Op: "fsync", Err: err}
			h.mu.Lock()
			h.err = err
			h.wakeAllLocked()
			h.mu.Unlock()
			return err
		}
		h.mu.Lock()
		h.dirty = false
		h.syncSeq = covered
		h.lastSync = time.Now()
		h.pendingBytes -= coveredBytes
		h.wakeAllLocked()
		h.mu.Unlock()
	}
	return nil
}

func (s *Store) flush(h *handle, sync bool) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return s.flushLocked(h, sync)
}

// Flush writes the buffered events of session id and fsyncs the file. A
// session this Store does not hold has nothing buffered: nil. ctx is only
// checked before starting; a started write and fsync complete.
func (s *Store) Flush(ctx context.Context, id string) error {
	if _, err := s.path(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := s.heldOrFailed(id)
	if err != nil || h == nil {
		return err
	}
	return s.flush(h, true)
}

// FlushAll flushes every held session (shutdown). It tries them all and
// joins the errors.
func (s *Store) FlushAll(ctx context.Context) error {
	return s.each(ctx, true)
}

func (s *Store) each(ctx context.Context, sync bool) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	hs := make([]*handle, 0, len(s.handles))
	for _, h := range s.handles {
		hs = append(hs, h)
	}
	s.mu.RUnlock()
	var errs []error
	for _, h := range hs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		errs = append(errs, s.flush(h, sync))
	}
	return errors.Join(errs...)
}

// Run is the background flusher, an actor for an oklog/run group. Every
// FlushInterval it writes the buffered events of all held sessions
// without fsync: they then survive a crash of this process (the kernel has
// them) and reach the disk with the next checkpoint or the kernel's own
// writeback, so a power loss loses at most what followed the last
// checkpoint. When ctx ends it runs a final FlushAll with fsync (not
// cancelled by ctx) and returns its error; a closed Store returns nil.
func (s *Store) Run(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			err := s.FlushAll(context.WithoutCancel(ctx))
			if errors.Is(err, ErrClosed) {
				return nil
			}
			return err
		case <-t.C:
			if err := s.each(ctx, false); err != nil && !errors.Is(err, ErrClosed) && ctx.Err() == nil {
				s.log.Warn("background flush failed", "err", err)
			}
		}
	}
}

// Append appends events to session id, which this Store must hold for
// writing (after Load, or Open through a session store), and makes them
// durable before returning. The first event's seq must equal the stored
// next seq (*SeqError otherwise) and every event must be valid. Appending
// directly to a session a live session.Store feeds breaks its seq order.
func (s *Store) Append(ctx context.Context, id string, events []session.Event) error {
	if _, err := s.path(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := s.held(id)
	if err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("persistence: append to %s: %w", id, ErrNotOpen)
	}
	if len(events) == 0 {
		return nil
	}
	h.mu.Lock()
	switch {
	case h.closed:
		err = fmt.Errorf("persistence: append to %s: %w", id, ErrNotOpen)
	case h.err != nil:
		err = h.err
	case events[0].Seq != h.next:
		err = &SeqError{ID: id, Want: h.next, Got: events[0].Seq}
	default:
		for i, ev := range events {
			if verr := session.ValidateEvent(ev, h.next+int64(i)); verr != nil {
				err = fmt.Errorf("persistence: append to %s: %w", id, verr)
				break
			}
		}
	}
	if err == nil {
		h.pending = append(h.pending, events...)
		h.next += int64(len(events))
	}
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return s.flush(h, true)
}

// Release flushes, fsyncs and unlocks session id and closes its file; the
// session is no longer held by this Store. Releasing a session that is not
// held is a no-op. The lock is released even if the final flush fails
// (the error is returned).
func (s *Store) Release(id string) error {
	if _, err := s.path(id); err != nil {
		return err
	}
	s.mu.RLock()
	h := s.handles[id]
	s.mu.RUnlock()
	if h == nil {
		return nil
	}
	return s.release(h)
}

func (s *Store) release(h *handle) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	err := s.flushLocked(h, true)
	s.mu.Lock()
	if s.handles[h.id] == h {
		delete(s.handles, h.id)
	}
	s.mu.Unlock()
	// Events buffered between the flush and the unpublish (a caller
	// releasing a session that is still appending) are written too.
	if err == nil {
		err = s.flushLocked(h, true)
	}
	h.mu.Lock()
	already := h.closed
	h.closed = true
	h.wakeAllLocked()
	lost := len(h.pending) + len(h.inflight) + h.refused
	h.mu.Unlock()
	if already {
		return nil
	}
	if lost > 0 || err != nil {
		if err == nil {
			err = &WriteError{ID: h.id, Path: h.path, Op: "write", Err: errors.New("released with events not written")}
		}
		var we *WriteError
		if errors.As(err, &we) {
			c := *we
			c.Unsaved = lost
			err = &c
		}
		// Remember it: a wait on this session after the release (the
		// emitter showing its last chunks) must fail, not find nothing
		// held and pass.
		s.mu.Lock()
		if s.handles[h.id] == nil {
			s.failed[h.id] = err
		}
		s.mu.Unlock()
		s.log.Error("session released with events not saved", "session_id", h.id, "path", h.path, "events", lost, "err", err)
	}
	return errors.Join(err, h.close())
}

// close unlocks and closes the file.
func (h *handle) close() error {
	uerr := unlock(h.f)
	cerr := h.f.Close()
	if cerr != nil {
		return fmt.Errorf("persistence: close %s: %w", h.path, cerr)
	}
	if uerr != nil {
		return fmt.Errorf("persistence: unlock %s: %w", h.path, uerr)
	}
	return nil
}

// Stored reports what of session id is written to its file: the seq the
// next written event will have and the file size in bytes. ok is false when
// this Store does not hold the session. Callers that need a consistent
// pair (the projection cache) call it right after Flush.
func (s *Store) Stored(id string) (nextSeq, size int64, ok bool) {
	h, err := s.held(id)
	if err != nil || h == nil {
		return 0, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, 0, false
	}
	return h.next - int64(len(h.pending)) - int64(len(h.inflight)), h.written, true
}
