package acp

// This file declares what the server needs from durable session storage.
// Package app adapts package persistence to it; acp does not import
// persistence.

import (
	"context"
	"github.com/acp-agent/acp-agent/agent/session/readonly"

	"github.com/acp-agent/acp-agent/agent/session"
)

// SessionStore is the server's view of durable storage. Implementations
// wrap "no such session" in ErrNotFound and "held by another writer" in
// ErrLocked. It must be safe for concurrent use.
type SessionStore interface {
	// List returns every stored session (header and last modification), in
	// any order, leaving out files whose header cannot be read. It must not
	// read whole logs; it may serve rows from a derived index.
	List(ctx context.Context) ([]StoredSession, error)
	// Inspect reads a stored session without taking it over (read-only).
	Inspect(ctx context.Context, id string) (session.Header, []session.Event, error)
	// Load takes over a stored session for writing (single-writer lock,
	// crash repair) and returns its log, ready for session.Store.Adopt.
	Load(ctx context.Context, id string) (session.Header, []session.Event, error)
	// Release gives up a session taken with Load that never became live.
	Release(id string) error
}

// StoredSession is one row of SessionStore.List.
type StoredSession struct {
	Header session.Header
	// UpdatedAt is the last modification, epoch milliseconds.
	UpdatedAt int64
	// Title, when known without reading the log (a projection cache), saves
	// the server a log read; empty means "derive it" unless TitleKnown.
	Title string
	// TitleKnown says Title is the session's title even when empty (a
	// derived index knows the session has none): nothing is read for it.
	TitleKnown bool
	// Size is the stored log's size in bytes (validates cached titles).
	Size int64
	// Damage, when known without reading the log (a derived index), says
	// what is damaged in it, as the store words it (a repaired log that
	// lost lines); "" for a healthy log or when unknown.
	Damage string
}

// ValidPartReader is optionally implemented by a SessionStore: for a log
// with a bad line in the middle (Load fails with code SESSION_CORRUPT) it
// returns the valid part before that line and says what is damaged, so
// session/load shows the thread read-only instead of losing it
// (readonly.ValidPart).
type ValidPartReader = readonly.ValidPartReader

// CodeSessionCorrupt is the code storage gives a corrupt session log.
const CodeSessionCorrupt = readonly.CodeCorrupt

// HeaderReader is optionally implemented by a SessionStore: it reads only a
// stored session's header. session/load uses it to tell a child (replayed
// read-only) from a top-level session without decoding the log twice.
type HeaderReader interface {
	Header(ctx context.Context, id string) (session.Header, error)
}
