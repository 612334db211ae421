package app

// This file adapts package persistence to its three consumers: the acp
// server's SessionStore, the subagent catalog's SessionReader and the
// subagent runtime's Durable.

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
)

// storedSessions is the acp.SessionStore view of a persistence.Store.
type storedSessions struct{ p *persistence.Store }

var _ acp.SessionStore = storedSessions{}

func (s storedSessions) List(ctx context.Context) ([]acp.StoredSession, error) {
	entries, err := s.p.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]acp.StoredSession, len(entries))
	for i, e := range entries {
		rows[i] = acp.StoredSession{Header: e.Header, UpdatedAt: e.ModTime, Size: e.Size}
	}
	return rows, nil
}

func (s storedSessions) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	h, events, err := persistedReader{s.p}.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(err)
	}
	return h, events, nil
}

func (s storedSessions) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := s.p.Load(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(err)
	}
	return snap.Header, snap.Events, nil
}

func (s storedSessions) Release(id string) error { return s.p.Release(id) }

var _ acp.HeaderReader = storedSessions{}

func (s storedSessions) Header(ctx context.Context, id string) (session.Header, error) {
	h, err := s.p.Header(ctx, id)
	if err != nil {
		return session.Header{}, storeError(err)
	}
	return h, nil
}

// storeError adds the acp sentinels the server classifies by.
func storeError(err error) error {
	var locked *persistence.LockedError
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return fmt.Errorf("%w: %w", acp.ErrNotFound, err)
	case errors.As(err, &locked):
		return fmt.Errorf("%w: %w", acp.ErrLocked, err)
	}
	return err
}

// persistedReader adapts persistence to the catalog's SessionReader.
type persistedReader struct{ p *persistence.Store }

var _ subagent.SessionReader = persistedReader{}

func (r persistedReader) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	entries, err := r.p.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]subagent.PersistedEntry, len(entries))
	for i, e := range entries {
		out[i] = subagent.PersistedEntry{Header: e.Header, Size: e.Size}
	}
	return out, nil
}

func (r persistedReader) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := r.p.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	return snap.Header, snap.Events, nil
}

// durableStore adapts persistence to subagent.Durable.
type durableStore struct{ p *persistence.Store }

var _ subagent.Durable = durableStore{}

func (d durableStore) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	return persistedReader{d.p}.List(ctx)
}

func (d durableStore) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	return persistedReader{d.p}.Inspect(ctx, id)
}

// Load takes a child over for writing; a child held by another process
// surfaces as subagent.ErrSessionLocked.
func (d durableStore) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := d.p.Load(ctx, id)
	var locked *persistence.LockedError
	if errors.As(err, &locked) {
		return session.Header{}, nil, fmt.Errorf("%w: %w", subagent.ErrSessionLocked, err)
	}
	if err != nil {
		return session.Header{}, nil, err
	}
	return snap.Header, snap.Events, nil
}

func (d durableStore) Release(id string) error { return d.p.Release(id) }

func (d durableStore) Flush(ctx context.Context, id string) error { return d.p.Flush(ctx, id) }
