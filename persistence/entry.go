package persistence

// This file defines Entry: List's header read for one session, the
// fallback of derived indexes (projcache.Index) for a row they cannot
// trust.

import (
	"context"
	"fmt"
)

// Entry returns the header and file facts of one stored session, read as
// List reads them (one open, one stat, the header line). Errors: ctx's,
// session.ErrInvalidID, or the file's (wrapped).
func (s *Store) Entry(ctx context.Context, id string) (Entry, error) {
	if err := s.checkOpen(); err != nil {
		return Entry{}, err
	}
	path, err := s.path(id)
	if err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, err
	}
	e, err := readEntry(path, id, make([]byte, MaxHeaderLine))
	if err != nil {
		return Entry{}, fmt.Errorf("persistence: entry %s: %w", id, err)
	}
	return e, nil
}
