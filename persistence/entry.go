package persistence

// This file defines Entry: List's header read for one session, the
// fallback of derived indexes (projcache.Index) for a row they cannot
// trust.

import (
	"context"
	"fmt"
	"sync"
)

// headerBufs holds MaxHeaderLine buffers: an index rebuild reads many
// headers, one at a time per goroutine. The header parsed from a buffer
// copies what it keeps.
var headerBufs = sync.Pool{New: func() any { b := make([]byte, MaxHeaderLine); return &b }}

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
	buf := headerBufs.Get().(*[]byte)
	e, err := readEntry(path, id, *buf)
	headerBufs.Put(buf)
	if err != nil {
		return Entry{}, fmt.Errorf("persistence: entry %s: %w", id, err)
	}
	return e, nil
}
