package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Delete removes the stored log of session id, and the backups a repair
// kept beside it (<id>.jsonl.broken*). It takes the session's writer lock
// first, without blocking, and unlinks the file while holding it: a
// session another Store holds (this process or another one) is refused
// with a *LockedError and left as it was, and a writer that opened the
// file just before cannot take it over afterwards (acquire checks that
// the name still names the file it locked). A session this Store holds is
// refused the same way: release it first. The sessions directory is
// fsynced, so a delete that returned survives a crash. A session with no
// log answers ErrNotFound.
func (s *Store) Delete(id string) error {
	path, err := s.path(id)
	if err != nil {
		return err
	}
	if h, err := s.held(id); err != nil {
		return err
	} else if h != nil {
		return &LockedError{ID: id, Path: path}
	}
	f, _, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("persistence: delete %s: %w", id, ErrNotFound)
		}
		return err
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		if errors.Is(err, errWouldBlock) {
			return &LockedError{ID: id, Path: path}
		}
		return fmt.Errorf("persistence: lock %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("persistence: delete %s: %w", id, ErrNotFound)
		}
		return fmt.Errorf("persistence: delete %s: %w", path, err)
	}
	// Backups are derived from the log: a failure to remove one is not a
	// failure to delete the session (its name no longer lists).
	if backups, err := filepath.Glob(path + ".broken*"); err == nil {
		for _, b := range backups {
			if rerr := os.Remove(b); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				s.log.Warn("could not remove the backup of a deleted session", "session_id", id, "path", b, "err", rerr)
			}
		}
	}
	return s.syncDir()
}
