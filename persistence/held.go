package persistence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// HeldElsewhere reports whether another Store (in this process or another
// one) holds session id for writing: its log may then end in a turn that
// is still running, not one a crash interrupted. It probes the writer's
// lock with a shared, non-blocking flock on a fresh descriptor and drops
// it at once; a writer trying to take the session in that instant gets a
// *LockedError, as with any other reader holding the probe. A session this
// Store holds is not held elsewhere.
func (s *Store) HeldElsewhere(id string) (bool, error) {
	path, err := s.path(id)
	if err != nil {
		return false, err
	}
	if h, err := s.held(id); err != nil || h != nil {
		return false, err
	}
	f, _, err := openRegular(id, path, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("persistence: %s: %w", id, ErrNotFound)
		}
		return false, err
	}
	defer f.Close()
	switch err := tryShared(f); {
	case err == nil:
		return false, nil
	case errors.Is(err, errWouldBlock):
		return true, nil
	default:
		return false, fmt.Errorf("persistence: probe the lock of %s: %w", path, err)
	}
}
