package persistence

// This file defines how a session becomes held for writing: creating its
// file, loading (and repairing) an existing one, and the session.Persister
// entry point.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Open implements session.Persister. For a new session (restored=false) it
// creates the file with the header and seed events and holds it; an
// existing file is an error wrapping ErrExists. For a restored session it
// takes the lock, unless this Store already holds it from Load, and makes
// sure the file holds exactly events: events beyond the stored log (the
// closers of an Inspect view) are appended durably, and a torn tail is cut;
// a stored log that is not a prefix of events is ErrConflict.
func (s *Store) Open(h session.Header, events []session.Event, restored bool) error {
	if _, err := s.path(h.ID); err != nil {
		return err
	}
	hd, err := s.held(h.ID)
	if err != nil {
		return err
	}
	if restored && hd != nil {
		// Held from Load, whose view is trusted (adopt compares only the
		// length): validate just what would be appended, not the whole
		// large log once more.
		hd.mu.Lock()
		stored := min(hd.next, int64(len(events)))
		hd.mu.Unlock()
		for i := stored; i < int64(len(events)); i++ {
			if err := session.ValidateEvent(events[i], i); err != nil {
				return fmt.Errorf("persistence: open %s: %w", h.ID, err)
			}
			if !json.Valid(events[i].Data) {
				return fmt.Errorf("persistence: open %s: %w", h.ID, &session.FormatError{Seq: i, Type: events[i].Type, Message: "has no valid JSON data"})
			}
		}
		return s.adopt(hd, h, events, nil)
	}
	if err := session.ValidateLog(events); err != nil {
		return fmt.Errorf("persistence: open %s: %w", h.ID, err)
	}
	if !restored {
		return s.create(h, events)
	}
	hd, v, err := s.acquire(h.ID)
	if err != nil {
		return err
	}
	if err := s.adopt(hd, h, events, v.events); err != nil {
		hd.close()
		return err
	}
	if err := s.register(hd); err != nil {
		hd.close()
		return err
	}
	return nil
}

// adopt marks hd live for a restored session with the given events. stored
// is the stored log when hd was just acquired (nil when held from Load,
// where Load's view is trusted and only the length is compared).
func (s *Store) adopt(hd *handle, h session.Header, events, stored []session.Event) error {
	hd.mu.Lock()
	var err error
	switch {
	case hd.closed:
		err = fmt.Errorf("persistence: open %s: %w", h.ID, ErrNotOpen)
	case hd.live:
		err = fmt.Errorf("persistence: open %s: %w (already live)", h.ID, ErrExists)
	case hd.header != h:
		err = fmt.Errorf("persistence: open %s: %w: header differs", h.ID, ErrConflict)
	case int64(len(events)) < hd.next:
		err = fmt.Errorf("persistence: open %s: %w: %d events offered, %d stored", h.ID, ErrConflict, len(events), hd.next)
	}
	if err == nil && stored != nil {
		for i, ev := range stored {
			if events[i].Type != ev.Type || events[i].Time != ev.Time {
				err = fmt.Errorf("persistence: open %s: %w at seq %d", h.ID, ErrConflict, i)
				break
			}
		}
	}
	if err != nil {
		hd.mu.Unlock()
		return err
	}
	extra := events[hd.next:]
	hd.pending = append(hd.pending, extra...)
	hd.next += int64(len(extra))
	hd.live = true
	hd.mu.Unlock()
	if len(extra) == 0 {
		return nil
	}
	if err := s.flush(hd, true); err != nil {
		hd.mu.Lock()
		hd.live = false
		hd.mu.Unlock()
		return err
	}
	return nil
}

// create writes a new session file. The header and seed go to a temp file
// in the same directory, which is fsynced and flocked, then hard-linked to
// the final name (link, unlike rename, refuses to replace an existing
// file), and the directory is fsynced. The temp file's descriptor becomes
// the held one, so the lock is in place before the name exists.
func (s *Store) create(h session.Header, seed []session.Event) error {
	path, _ := s.path(h.ID)
	if hd, err := s.held(h.ID); err != nil {
		return err
	} else if hd != nil {
		return fmt.Errorf("persistence: create %s: %w", h.ID, ErrExists)
	}
	if err := h.Validate(h.ID); err != nil {
		return fmt.Errorf("persistence: create %s: %w", h.ID, err)
	}
	line, err := session.MarshalHeaderLine(h)
	if err != nil {
		return fmt.Errorf("persistence: create %s: %w", h.ID, err)
	}
	var buf bytes.Buffer
	buf.Write(line)
	buf.WriteByte('\n')
	if err := encodeEvents(&buf, seed); err != nil {
		return err
	}

	tmp, f, err := s.createTemp(h.ID)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	// Errors name the session's file, not the temp file fail removes: the
	// cause (no space left, read-only file system) is about that path.
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fail(fmt.Errorf("persistence: create %s: write: %w", path, err))
	}
	if err := s.sync(f); err != nil {
		return fail(fmt.Errorf("persistence: create %s: fsync: %w", path, err))
	}
	s.hit(FaultPublish)
	if err := publish(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("persistence: create %s: %w", h.ID, ErrExists))
		}
		return fail(fmt.Errorf("persistence: create %s: %w", h.ID, err))
	}
	if err := s.syncDir(); err != nil {
		// The name may not be durable; a later fsync of the file would not
		// cover it, so fail the creation rather than hold a session whose
		// file may vanish on a power loss.
		f.Close()
		os.Remove(path)
		return fmt.Errorf("persistence: fsync %s: %w", s.dir, err)
	}
	n := int64(len(seed))
	hd := &handle{id: h.ID, path: path, header: h, f: f, next: n, written: int64(buf.Len()), wroteSeq: n, syncSeq: n, live: true}
	if err := s.register(hd); err != nil {
		hd.close()
		return err
	}
	return nil
}

// createTemp creates a fresh temp file for id, locked. Its name starts
// with a dot, which no session id does, so it can collide with neither a
// session file nor List.
func (s *Store) createTemp(id string) (string, *os.File, error) {
	for range 8 {
		var rnd [8]byte
		rand.Read(rnd[:])
		name := filepath.Join(s.dir, "."+id+"."+hex.EncodeToString(rnd[:])+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("persistence: create a session file in %s: %w", s.dir, err)
		}
		// Lock at once: an unlocked temp file is a crash leftover that a
		// store opening this directory removes (removeTempLeftovers). If a
		// remover got to it in the instant before the lock, the lock fails
		// or the name no longer names this file: start over.
		if err := tryLock(f); err != nil {
			f.Close()
			if errors.Is(err, errWouldBlock) {
				continue
			}
			return "", nil, fmt.Errorf("persistence: lock %s: %w", name, err)
		}
		fst, ferr := f.Stat()
		nst, nerr := os.Lstat(name)
		if ferr != nil || nerr != nil || !os.SameFile(fst, nst) {
			f.Close()
			continue
		}
		return name, f, nil
	}
	return "", nil, errors.New("persistence: create temp file: too many collisions")
}

// publish gives the temp file its final name without replacing an existing
// file, and removes the temp name.
func publish(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		// A leftover dot-named temp name is harmless (List skips it).
		_ = os.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	// File systems without hard links: check, then rename. This leaves a
	// small race between two creators of one id, which link would close.
	var le *os.LinkError
	if errors.As(err, &le) && (errors.Is(le.Err, syscall.EPERM) || errors.Is(le.Err, syscall.ENOTSUP) || errors.Is(le.Err, syscall.EOPNOTSUPP) || errors.Is(le.Err, syscall.EMLINK)) {
		if _, serr := os.Lstat(path); serr == nil {
			return fs.ErrExist
		}
		return os.Rename(tmp, path)
	}
	return err
}

// acquire opens the existing file of id for append, takes its lock, reads
// it and commits the torn-tail repair: the torn bytes are saved to
// a new <id>.jsonl.broken[.N] and fsynced (backup.go), then the file is
// truncated to its valid prefix and fsynced; a failed backup stops the
// load with a *BackupError and leaves the file as it was. The returned handle is not yet registered.
func (s *Store) acquire(id string) (*handle, logView, error) {
	path, err := s.path(id)
	if err != nil {
		return nil, logView{}, err
	}
	f, st, err := openRegular(id, path, os.O_RDWR|os.O_APPEND)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, logView{}, fmt.Errorf("persistence: load %s: %w", id, ErrNotFound)
		}
		return nil, logView{}, fmt.Errorf("persistence: load %s: %w", id, err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, logView{}, &LockedError{ID: id, Path: path}
		}
		return nil, logView{}, fmt.Errorf("persistence: lock %s: %w", path, err)
	}
	// A Delete that held the lock between our open and our lock has
	// unlinked the file: taking over the orphan would write a session
	// nobody can find again.
	if cur, err := os.Lstat(path); err != nil || !os.SameFile(st, cur) {
		f.Close()
		return nil, logView{}, fmt.Errorf("persistence: load %s: %w", id, ErrNotFound)
	}
	hd := &handle{id: id, path: path, f: f}
	// Streamed (stream.go): a large log is not held twice, as bytes and
	// as events, while it is decoded.
	v, err := streamLog(id, path, f, st.Size())
	if err != nil {
		hd.close()
		return nil, logView{}, err
	}
	if v.torn {
		cut, err := readTail(f, v.good)
		if err != nil {
			hd.close()
			return nil, logView{}, fmt.Errorf("persistence: read %s: %w", path, err)
		}
		// The backup is durable before the cut; without it nothing is cut.
		broken, err := s.keepBackup(id, path, cut)
		if err != nil {
			hd.close()
			return nil, logView{}, err
		}
		if err := f.Truncate(v.good); err != nil {
			hd.close()
			return nil, logView{}, fmt.Errorf("persistence: truncate torn tail of %s: %w", path, err)
		}
		if err := s.sync(f); err != nil {
			hd.close()
			return nil, logView{}, fmt.Errorf("persistence: fsync %s: %w", path, err)
		}
		s.log.Warn("cut torn tail of session log", "session_id", id, "path", path, "bytes", len(cut), "kept", broken)
	} else if err := s.sync(f); err != nil {
		// A crashed writer may have left lines the kernel has but the disk
		// has not: make them durable before anyone is shown them.
		hd.close()
		return nil, logView{}, fmt.Errorf("persistence: fsync %s: %w", path, err)
	}
	hd.header = v.header
	hd.next = int64(len(v.events))
	hd.wroteSeq, hd.syncSeq = hd.next, hd.next
	hd.written = v.good
	return hd, v, nil
}

// Load returns the same view as Inspect but commits it: it takes the
// session's write lock (*LockedError if another Store or process holds
// it), cuts a torn tail, appends the closing events of
// session.CloseInterruptedTurn durably, and keeps the session held for
// writing until Release, so a following
// session.Store.Adopt (Open with restored=true) needs no second lock.
// Loading a session this Store already holds flushes it and returns its
// current view (which may end inside a live turn).
func (s *Store) Load(ctx context.Context, id string) (Snapshot, error) {
	if _, err := s.path(id); err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	hd, err := s.held(id)
	if err != nil {
		return Snapshot{}, err
	}
	if hd != nil {
		if err := s.flush(hd, true); err != nil {
			return Snapshot{}, err
		}
		if snap, ok, err := s.heldView(hd); ok {
			return snap, err
		}
		return Snapshot{}, fmt.Errorf("persistence: load %s: released concurrently: %w", id, ErrNotOpen)
	}
	hd, v, err := s.acquire(id)
	if err != nil {
		return Snapshot{}, err
	}
	cl, err := repair(id, hd.path, v)
	if err != nil {
		hd.close()
		return Snapshot{}, err
	}
	if len(cl) > 0 {
		hd.pending = cl
		hd.next += int64(len(cl))
		if err := s.flush(hd, true); err != nil {
			hd.close()
			return Snapshot{}, err
		}
		s.log.Info("closed interrupted turn", "session_id", id, "closers", len(cl))
	}
	if err := s.register(hd); err != nil {
		hd.close()
		return Snapshot{}, err
	}
	return Snapshot{
		Header:    v.header,
		Events:    append(v.events, cl...),
		Size:      hd.written,
		Torn:      v.torn,
		Synthetic: len(cl),
	}, nil
}
