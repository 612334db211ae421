package app

// This file wires the durable catalog: the projection registry (subagent
// identity, timing and title units) kept live over the session store, the
// derived projection cache and catalog index, and the subagent Catalog that lists children
// live or from disk.

import (
	"context"
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// wireCatalog builds a.Projections, a.Cache and a.Catalog. The cache is
// written whenever a session's projection state matches what is on disk:
// after each turn's checkpoint (AgentOptions) and when a session leaves the
// store (child disposal, session/close, shutdown).
func wireCatalog(a *App) error {
	a.Projections = projection.New()
	if _, err := subagent.RegisterProjections(a.Projections); err != nil {
		return err
	}
	if _, err := a.Projections.Register(projection.Title()); err != nil {
		return err
	}
	if _, err := a.Projections.Register(projection.Repaired()); err != nil {
		return err
	}
	cache, err := projcache.Open(a.Config.DataDir, a.Projections)
	if err != nil {
		return err
	}
	a.Cache = cache
	a.index = cache.Index(a.Persist.Dir(), HeaderReader(a.Persist))
	index := catalogIndex{a.index}
	// Registered before the projection registry attaches, so on removal it
	// runs while the session's projection state still exists.
	unobserve := a.Sessions.Observe(&session.Observer{Removed: func(s *session.Session) {
		a.checkpointCache(context.Background(), s)
	}})
	detach := a.Projections.Attach(a.Sessions)
	a.Closers = append(a.Closers, func() error { detach(); unobserve(); return nil })
	a.Catalog = &subagent.Catalog{
		Sessions:    a.Sessions,
		Projections: a.Projections,
		Persisted:   durableStore{a.Persist},
		Cache:       a.Cache,
		Index:       index,
	}
	return nil
}

// catalogIndex adapts the projection cache's catalog index to the
// subagent catalog.
type catalogIndex struct{ x *projcache.Index }

var _ subagent.CatalogIndex = catalogIndex{}

func (c catalogIndex) Scan(ctx context.Context, skip func(id string) bool) ([]subagent.PersistedEntry, error) {
	rows, err := c.x.Scan(ctx, skip)
	if err != nil {
		return nil, err
	}
	out := make([]subagent.PersistedEntry, len(rows))
	for i, r := range rows {
		out[i] = subagent.PersistedEntry{Header: r.Header, Size: r.Size, Values: r.Values}
	}
	return out, nil
}

// checkpointCache flushes s and records its projection values in the
// cache. Failures only cost a later cold read, so they are logged.
func (a *App) checkpointCache(ctx context.Context, s *session.Session) {
	if a.Cache == nil {
		return
	}
	if err := a.Persist.Flush(ctx, s.ID()); err != nil {
		a.Log.Debug("projection cache skipped", "session_id", s.ID(), "err", err)
		return
	}
	next, size, ok := a.Persist.Stored(s.ID())
	if !ok {
		return
	}
	if _, err := a.Cache.Checkpoint(ctx, s, next, size); err != nil {
		a.Log.Warn("projection cache write failed", "session_id", s.ID(), "err", err)
	}
}

// turnEnded reports whether s's last event closes a turn.
func turnEnded(s *session.Session) bool {
	last, ok := s.Last()
	return ok && last.Type == session.TypeTurnEnd
}

// cachedTitle returns the title recorded in a valid cache row; ok is false
// when there is no usable row (the caller then reads the log).
func (a *App) cachedTitle(h session.Header, size int64) (title string, ok bool) {
	if a.Cache == nil {
		return "", false
	}
	values, err := a.Cache.Get(h, size)
	if err != nil || values == nil {
		return "", false
	}
	return IndexedTitle(values)
}

// liveTitle returns the title of a live session from its incremental
// projection (no read of its log, whose older part may be evicted); ok is
// false when the projection has no title the log would agree with.
func (a *App) liveTitle(s *session.Session) (title string, ok bool) {
	if a.Projections == nil {
		return "", false
	}
	_, values, _, err := a.Projections.LiveValues(s)
	if err != nil {
		return "", false
	}
	return IndexedTitle(values)
}

// IndexedTitle returns the title among checkpointed projection values; ok
// is false when they hold none the log would agree with. The unit's view is
// the last title event's title, while acp.LatestTitle skips empty titles:
// they agree except on an empty last title, which is left to the log.
func IndexedTitle(values map[string]json.RawMessage) (title string, ok bool) {
	raw, present := values[projection.KeyTitle]
	if !present {
		return "", false
	}
	var t *string
	if json.Unmarshal(raw, &t) != nil || (t != nil && *t == "") {
		return "", false
	}
	if t == nil {
		return "", true
	}
	return *t, true
}

// IndexedRepaired returns the repair summary among checkpointed projection
// values (nil for a log never repaired); ok is false when they hold no
// usable value (the caller then reads the log).
func IndexedRepaired(values map[string]json.RawMessage) (sum *session.RepairedData, ok bool) {
	raw, present := values[projection.KeyRepaired]
	if !present || json.Unmarshal(raw, &sum) != nil {
		return nil, false
	}
	return sum, true
}
