package persistence

// This file defines the durable watermark: what a caller about to show or
// do something asks before it may rely on the log recording it.

import (
	"context"
)

// SyncTo makes the event with seq (and everything before it) of session id
// durable: written and fsynced. It is the write-ahead point of doc.go
// ("nothing is shown or done that a restart could forget"): the agent loop
// reaches it before a tool executes, the ACP emitter before a tool call is
// shown. It costs nothing when the watermark already covers seq (the
// common case: whoever comes second finds the work done), else it is one
// Flush. A session this Store does not hold has nothing buffered: its file
// is complete (Release fsyncs), so SyncTo returns nil. An event not yet
// appended (seq beyond the log) is covered by nothing: the current log is
// flushed and nil returned, as for Flush.
func (s *Store) SyncTo(ctx context.Context, id string, seq int64) error {
	if _, err := s.path(id); err != nil {
		return err
	}
	h, err := s.heldOrFailed(id)
	if err != nil || h == nil {
		return err
	}
	if s.Durable(id) > seq {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.flush(h, true)
}

// Durable returns the durable watermark of session id: the number of its
// events known written and fsynced (so seq < Durable(id) survives a crash
// and a power loss). It is 0 for a session this Store does not hold.
func (s *Store) Durable(id string) int64 {
	h, err := s.held(id)
	if err != nil || h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.syncSeq
}
