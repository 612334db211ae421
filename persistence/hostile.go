package persistence

// This file defines how the store treats a data directory it cannot
// trust: session files are opened without ever blocking (a FIFO, socket or
// device in place of a log is reported, never waited on), unreadable
// entries are reported as rows rather than skipped silently, and temp
// files left by a crash are removed when the store opens.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acp-agent/acp-agent/agent/session"
)

// ErrUnreadable is matched (errors.Is) by every *UnreadableError.
var ErrUnreadable = errors.New("persistence: unreadable session file")

// UnreadableError reports a session name whose file cannot be a session
// log: not a regular file, empty, or without a valid header line. Problem
// is a short description for people ("named pipe, not a session file").
type UnreadableError struct {
	ID      string
	Path    string
	Problem string
	Err     error // the underlying cause, if any
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("persistence: session %s: %s (%s)", e.ID, e.Problem, e.Path)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Is makes every UnreadableError match ErrUnreadable.
func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }

// Problems of UnreadableError, as printed by the sessions listing.
const (
	ProblemNamedPipe   = "named pipe, not a session file"
	ProblemSocket      = "socket, not a session file"
	ProblemDevice      = "device, not a session file"
	ProblemDirectory   = "directory, not a session file"
	ProblemIrregular   = "not a regular file"
	ProblemEmpty       = "empty file, no header"
	ProblemNoHeader    = "no complete header line"
	ProblemBadHeader   = "bad header"
	ProblemUnreachable = "cannot be opened"
	ProblemSymlink     = "symlink"
)

// openProblem says why a session file could not be opened, keeping the
// cause a person can act on (permission denied, read-only file system)
// rather than only "cannot be opened".
func openProblem(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ENOSPC, syscall.EIO:
			return ProblemUnreachable + ": " + errno.Error()
		}
	}
	return ProblemUnreachable
}

// fileProblem describes a file mode that is not a regular file.
func fileProblem(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return ProblemNamedPipe
	case m&fs.ModeSocket != 0:
		return ProblemSocket
	case m&fs.ModeDevice != 0:
		return ProblemDevice
	case m.IsDir():
		return ProblemDirectory
	case m&fs.ModeSymlink != 0:
		return ProblemSymlink
	}
	return ProblemIrregular
}

// openRegular opens the session file of id without blocking and makes
// sure it is a regular file. O_NONBLOCK makes the open of a FIFO without a
// writer (or of a device) return at once; the fstat then rejects it before
// any read could wait. On a regular file O_NONBLOCK changes nothing. A
// missing file is reported as fs.ErrNotExist (unwrapped, for the caller to
// wrap); anything else that is not a session file is *UnreadableError.
//
// A symlink in place of a session file is refused (ProblemSymlink) and
// never followed (O_NOFOLLOW): a link planted in the data directory must
// not make the store read or write a file elsewhere.
func openRegular(id, path string, flag int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		// Opening a Unix socket fails (ENXIO), a directory for writing
		// fails (EISDIR), a symlink ELOOP: say what is there rather than
		// how open failed.
		if st, lerr := os.Lstat(path); lerr == nil && !st.Mode().IsRegular() {
			return nil, nil, &UnreadableError{ID: id, Path: path, Problem: fileProblem(st.Mode()), Err: err}
		}
		return nil, nil, &UnreadableError{ID: id, Path: path, Problem: openProblem(err), Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &UnreadableError{ID: id, Path: path, Problem: openProblem(err), Err: err}
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &UnreadableError{ID: id, Path: path, Problem: fileProblem(st.Mode())}
	}
	return f, st, nil
}

// Unreadable is one row of Scan that could not be listed: a session name
// whose file is not a readable session log.
type Unreadable struct {
	ID      string
	Path    string
	Problem string
	ModTime int64 // last modification, epoch ms (0 if unknown)
	Err     error
}

// Scan is List that also reports what it could not list: every
// <id>.jsonl name in the sessions directory is either an Entry or an
// Unreadable row (a FIFO, directory, empty file, bad header...), never
// silently skipped. Like List it reads only header lines and never
// blocks on a special file.
func (s *Store) Scan(ctx context.Context) ([]Entry, []Unreadable, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	names, err := readDirNames(s.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("persistence: list %s: %w", s.dir, err)
	}
	out := make([]Entry, 0, len(names))
	var bad []Unreadable
	buf := make([]byte, MaxHeaderLine)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		id, ok := strings.CutSuffix(name, ".jsonl")
		if !ok || session.ValidateID(id) != nil {
			continue // temp files, .broken copies, strays
		}
		path := filepath.Join(s.dir, name)
		e, err := readEntry(path, id, buf)
		if err != nil {
			if u, ok := unreadable(id, path, err); ok {
				bad = append(bad, u)
			}
			continue
		}
		out = append(out, e)
	}
	return out, bad, nil
}

// Check reads the header of session id the way Scan does and reports the
// session as Unreadable if that fails; ok is false when the header reads
// fine or the file no longer exists. Listings served from a derived index
// (which skips what it cannot list) use it for the names they left out.
func (s *Store) Check(ctx context.Context, id string) (Unreadable, bool) {
	path, err := s.path(id)
	if err != nil {
		return Unreadable{}, false
	}
	if ctx.Err() != nil {
		return Unreadable{}, false
	}
	_, err = readEntry(path, id, make([]byte, MaxHeaderLine))
	if err == nil {
		return Unreadable{}, false
	}
	return unreadable(id, path, err)
}

// unreadable turns a header read failure into a row; a file removed since
// the directory was read is no row at all.
func unreadable(id, path string, err error) (Unreadable, bool) {
	if errors.Is(err, fs.ErrNotExist) {
		return Unreadable{}, false
	}
	u := Unreadable{ID: id, Path: path, Problem: openProblem(err), Err: err}
	var ue *UnreadableError
	if errors.As(err, &ue) {
		u.Problem = ue.Problem
	}
	// Lstat: a symlink is not followed, here as in the open.
	if st, lerr := os.Lstat(path); lerr == nil {
		u.ModTime = st.ModTime().UnixMilli()
	}
	return u, true
}

// headerProblem classifies a header read failure of a regular file.
func headerProblem(id, path string, size int64, err error) error {
	if size == 0 {
		return &UnreadableError{ID: id, Path: path, Problem: ProblemEmpty, Err: err}
	}
	var he *session.HeaderError
	if errors.As(err, &he) {
		return &UnreadableError{ID: id, Path: path, Problem: ProblemBadHeader + ": " + he.Message, Err: err}
	}
	return &UnreadableError{ID: id, Path: path, Problem: ProblemNoHeader, Err: err}
}

// removeTempLeftovers deletes the dot-named temp files (".<id>.<hex>.tmp")
// that a crash between creating and publishing a session left behind. A
// creator locks its temp file right after creating it, so a temp file
// whose lock can be taken has no live creator: it is removed. One that is
// locked belongs to a creator still at work (here or in another process)
// and is left alone. Failures are logged, never fatal.
func (s *Store) removeTempLeftovers() {
	names, err := readDirNames(s.dir)
	if err != nil {
		s.log.Warn("cannot scan for temp leftovers", "dir", s.dir, "err", err)
		return
	}
	for _, name := range names {
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tmp") {
			continue
		}
		path := filepath.Join(s.dir, name)
		st, err := os.Lstat(path)
		if err != nil {
			continue
		}
		if st.Mode().IsRegular() {
			f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				continue
			}
			if err := tryLock(f); err != nil {
				f.Close() // a creator holds it
				continue
			}
			err = os.Remove(path)
			f.Close()
			if err != nil {
				s.log.Warn("cannot remove temp leftover", "path", path, "err", err)
				continue
			}
		} else if st.IsDir() {
			continue // not something this store made
		} else if err := os.Remove(path); err != nil {
			s.log.Warn("cannot remove temp leftover", "path", path, "err", err)
			continue
		}
		s.log.Info("removed temp file left by a crash", "path", path)
	}
}

// Header reads only the header line of stored session id (one small read,
// whatever the log's length), without locking or repairing anything.
// Errors: ErrNotFound (wrapped), session.ErrInvalidID, *UnreadableError.
func (s *Store) Header(ctx context.Context, id string) (session.Header, error) {
	path, err := s.path(id)
	if err != nil {
		return session.Header{}, err
	}
	if err := ctx.Err(); err != nil {
		return session.Header{}, err
	}
	e, err := readEntry(path, id, make([]byte, MaxHeaderLine))
	if errors.Is(err, fs.ErrNotExist) {
		return session.Header{}, fmt.Errorf("persistence: header of %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return session.Header{}, fmt.Errorf("persistence: header of %s: %w", id, err)
	}
	return e.Header, nil
}
