package persistence

// This file defines the group commit: how shown text becomes durable
// without one fsync per chunk.

import (
	"context"
	"time"
)

// Group commit defaults (Options.GroupWindow, Options.GroupBytes).
const (
	DefaultGroupWindow = 10 * time.Millisecond
	DefaultGroupBytes  = 4 << 10
)

// SyncSoon makes the event with seq (and everything before it) of session
// id durable, like SyncTo, but shares the fsync with its neighbours: a
// commit runs at once when none ran in the last group window, else when
// the window since the last one has passed or a few KiB (GroupBytes) are
// buffered, whichever comes first; callers arriving in between wait for
// it. It is the write-ahead point for streamed text: a text chunk is shown
// only once a restart cannot forget it, and a fast stream costs about one
// fsync per window instead of one per chunk. ctx ending stops the wait
// (its error is returned; the commit still happens later).
func (s *Store) SyncSoon(ctx context.Context, id string, seq int64) error {
	if _, err := s.path(id); err != nil {
		return err
	}
	h, err := s.heldOrFailed(id)
	if err != nil || h == nil {
		return err
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		h.mu.Lock()
		switch {
		case h.syncSeq > seq:
			h.mu.Unlock()
			return nil
		case h.err != nil:
			// A failed write or release: nothing more is covered.
			err := h.err
			h.mu.Unlock()
			return err
		case h.closed:
			// Released cleanly: Release fsynced everything it was given.
			h.mu.Unlock()
			return nil
		}
		wait := s.groupWindow - time.Since(h.lastSync)
		// Without fsync (NoSync) a commit is only a write: nothing to share.
		if wait <= 0 || h.pendingBytes >= s.groupBytes || s.noSync {
			h.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.flush(h, true); err != nil {
				return err
			}
			continue // a batch written concurrently may still be ahead of seq
		}
		wake := h.wakeLocked()
		h.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-wake: // a commit ran, or the byte threshold was crossed
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wakeLocked returns the channel closed at the next commit or when the
// buffered bytes cross the group threshold. The caller holds h.mu.
func (h *handle) wakeLocked() <-chan struct{} {
	if h.wake == nil {
		h.wake = make(chan struct{})
	}
	return h.wake
}

// wakeAllLocked wakes the group commit's waiters. The caller holds h.mu.
func (h *handle) wakeAllLocked() {
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
}
