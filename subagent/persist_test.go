package subagent_test

// This file adapts persistence.Store to subagent.Durable for tests (the
// composition root has its own adapter; test files may import persistence
// because the layering rule concerns the package, not its tests).

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

type durable struct{ s *persistence.Store }

func (d durable) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	es, err := d.s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]subagent.PersistedEntry, len(es))
	for i, e := range es {
		out[i] = subagent.PersistedEntry{Header: e.Header, Size: e.Size}
	}
	return out, nil
}

func (d durable) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := d.s.Inspect(ctx, id)
	return snap.Header, snap.Events, err
}

func (d durable) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := d.s.Load(ctx, id)
	var le *persistence.LockedError
	if errors.As(err, &le) {
		return session.Header{}, nil, fmt.Errorf("%w: %w", subagent.ErrSessionLocked, err)
	}
	return snap.Header, snap.Events, err
}

func (d durable) Release(id string) error { return d.s.Release(id) }

func (d durable) Flush(ctx context.Context, id string) error { return d.s.Flush(ctx, id) }

func mustPersistence(t testing.TB) *persistence.Store {
	t.Helper()
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps
}

// durableStack builds a stack whose sessions persist under dir.
func durableStack(t testing.TB, dir string, m model.Model) (*subagenttest.Stack, *persistence.Store) {
	t.Helper()
	return durableStackMax(t, dir, m, 0)
}

// durableStackNoLimit is durableStack without a background limit, for
// benchmarks that hold a thousand children running at once: with the
// default limit the start (or cold resume) past it would wait for a slot
// that frees only when the benchmark releases the children, after the
// last start.
func durableStackNoLimit(t testing.TB, dir string, m model.Model) (*subagenttest.Stack, *persistence.Store) {
	t.Helper()
	return durableStackMax(t, dir, m, -1)
}

// durableStackMax is durableStack with maxBackground (0: the default,
// negative: no limit).
func durableStackMax(t testing.TB, dir string, m model.Model, maxBackground int) (*subagenttest.Stack, *persistence.Store) {
	t.Helper()
	ps, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the stack's own cleanup, so it runs after it.
	t.Cleanup(func() { _ = ps.Close() })
	st := subagenttest.New(t, subagenttest.Config{
		Model:   m,
		Attach:  func(s *session.Store) { ps.Attach(s) },
		Durable: durable{ps},
		SyncTo:  ps.SyncTo,

		MaxBackground: maxBackground,
	})
	return st, ps
}
