package app

// This file adapts package persistence to the acp server's SessionStore.

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
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
	snap, err := s.p.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(err)
	}
	return snap.Header, snap.Events, nil
}

func (s storedSessions) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := s.p.Load(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(err)
	}
	return snap.Header, snap.Events, nil
}

func (s storedSessions) Release(id string) error { return s.p.Release(id) }

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
