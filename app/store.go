package app

// This file adapts package persistence to its consumers, one adapter each,
// declared by the consumer: the agent loop's Journal (write-ahead points),
// the acp server's SessionStore, the subagent runtime's Durable (which is
// also the catalog's SessionReader) and the catalog index's HeaderReader.
// Appended events reach persistence through session.Persister
// (persistence.Store.Attach).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// openStore opens persistence and the live session store over it; the
// live store's events reach persistence through session.Persister.
func (a *App) openStore() error {
	p, err := persistence.Open(a.Config.DataDir, persistence.Options{Logger: a.Log, NoSync: a.Config.hooks().NoSync, Fault: a.Config.hooks().StorageFault, FaultErr: a.Config.hooks().StorageFaultErr})
	if err != nil {
		return err
	}
	a.Persist = p
	a.Sessions = session.NewStore(a.Config.Sources)
	a.detach = a.Persist.Attach(a.Sessions)
	return nil
}

// storedSessions is the acp.SessionStore view of a persistence.Store.
// With a catalog index, List is served from it (one stat per session, its
// valid rows carrying titles); without one, every header is read.
type storedSessions struct {
	p     *persistence.Store
	index *projcache.Index
	cache *projcache.Cache // rows dropped with a deleted session; may be nil
	// call, when set, is asked before each read (testhooks.StoreCall).
	call func(ctx context.Context, op, id string) error
}

func (s storedSessions) enter(ctx context.Context, op, id string) error {
	if s.call == nil {
		return nil
	}
	return s.call(ctx, op, id)
}

var _ acp.Deleter = storedSessions{}

// HeldElsewhere is persistence's probe of another writer's lock.
func (s storedSessions) HeldElsewhere(id string) (bool, error) {
	held, err := s.p.HeldElsewhere(id)
	if err != nil {
		return false, storeError(id, err)
	}
	return held, nil
}

// Delete removes the logs of ids in order, and their projection rows
// (derived: a row left behind is a miss, never a listed session; the
// catalog index drops a deleted log at its next scan).
func (s storedSessions) Delete(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.p.Delete(id); err != nil {
			return storeError(id, err)
		}
		if s.cache != nil {
			_ = s.cache.Remove(id)
		}
	}
	return nil
}

var _ acp.SessionStore = storedSessions{}

func (s storedSessions) List(ctx context.Context) ([]acp.StoredSession, error) {
	if err := s.enter(ctx, "list", ""); err != nil {
		return nil, err
	}
	if s.index == nil {
		return listAs(ctx, s.p, func(e persistence.Entry) acp.StoredSession {
			return acp.StoredSession{Header: e.Header, UpdatedAt: e.ModTime, Size: e.Size}
		})
	}
	rows, err := s.index.Scan(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]acp.StoredSession, len(rows))
	for i, r := range rows {
		out[i] = acp.StoredSession{Header: r.Header, UpdatedAt: r.ModTime, Size: r.Size}
		out[i].Title, out[i].TitleKnown = IndexedTitle(r.Values)
		if sum, ok := IndexedRepaired(r.Values); ok && sum != nil {
			out[i].Damage = persistence.RepairedDamage(r.Header.ID, LogPath(s.p, r.Header.ID), *sum).Text()
		}
	}
	return out, nil
}

// describeDamage is acp.Options.DescribeDamage: a damaged log's read
// failure, or a repaired log's summary, in persistence's one wording.
func describeDamage(p *persistence.Store) func(id string, events []session.Event, err error) string {
	return func(id string, events []session.Event, err error) string {
		if err != nil {
			if d, ok := persistence.DamageOf(err); ok {
				return d.Text()
			}
			return ""
		}
		if sum, ok := session.Repaired(events); ok {
			return persistence.RepairedDamage(id, LogPath(p, id), sum).Text()
		}
		return ""
	}
}

// listAs lists the stored sessions as a consumer's rows.
func listAs[T any](ctx context.Context, p *persistence.Store, row func(persistence.Entry) T) ([]T, error) {
	entries, err := p.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]T, len(entries))
	for i, e := range entries {
		rows[i] = row(e)
	}
	return rows, nil
}

func (s storedSessions) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	if err := s.enter(ctx, "inspect", id); err != nil {
		return session.Header{}, nil, err
	}
	snap, err := s.p.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(id, err)
	}
	return snap.Header, snap.Events, nil
}

var _ acp.ValidPartReader = storedSessions{}

// InspectValid is persistence's InspectValid for session/load: the valid
// part of a log damaged in the middle, and what is damaged.
func (s storedSessions) InspectValid(ctx context.Context, id string) (session.Header, []session.Event, string, error) {
	snap, ce, err := s.p.InspectValid(ctx, id)
	if err != nil {
		return session.Header{}, nil, "", storeError(id, err)
	}
	if ce == nil {
		return snap.Header, snap.Events, "", nil
	}
	return snap.Header, snap.Events, Reason(ce), nil
}

func (s storedSessions) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	if err := s.enter(ctx, "load", id); err != nil {
		return session.Header{}, nil, err
	}
	snap, err := s.p.Load(ctx, id)
	if err != nil {
		return session.Header{}, nil, storeError(id, err)
	}
	return snap.Header, snap.Events, nil
}

func (s storedSessions) Release(id string) error { return s.p.Release(id) }

var _ acp.HeaderReader = storedSessions{}

func (s storedSessions) Header(ctx context.Context, id string) (session.Header, error) {
	if err := s.enter(ctx, "header", id); err != nil {
		return session.Header{}, err
	}
	h, err := s.p.Header(ctx, id)
	if err != nil {
		return session.Header{}, storeError(id, err)
	}
	return h, nil
}

// storeError adds the acp sentinels the server classifies by, with a
// message for people: the editor shows it as is, so it names the session
// and what to do, not the packages it went through.
func storeError(id string, err error) error {
	var locked *persistence.LockedError
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return &classifiedError{msg: "no stored session " + id, errs: []error{acp.ErrNotFound, err}}
	case errors.As(err, &locked):
		return &classifiedError{
			msg:  fmt.Sprintf("session %s is open in another acp-agent process (it holds the lock on %s); close it there first", id, locked.Path),
			errs: []error{acp.ErrLocked, err},
		}
	}
	return err
}

// classifiedError carries a sentinel and the cause (errors.Is finds both)
// under its own message.
type classifiedError struct {
	msg  string
	errs []error
}

func (e *classifiedError) Error() string   { return e.msg }
func (e *classifiedError) Unwrap() []error { return e.errs }

// durableStore adapts persistence to subagent.Durable and to the
// catalog's subagent.SessionReader.
type durableStore struct{ p *persistence.Store }

var (
	_ subagent.Durable       = durableStore{}
	_ subagent.SessionReader = durableStore{}
)

func (d durableStore) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	return listAs(ctx, d.p, func(e persistence.Entry) subagent.PersistedEntry {
		return subagent.PersistedEntry{Header: e.Header, Size: e.Size}
	})
}

func (d durableStore) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	snap, err := d.p.Inspect(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	return snap.Header, snap.Events, nil
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

var _ subagent.HeldChecker = durableStore{}

// HeldElsewhere tells whether another process holds session id for
// writing (the lock of its log).
func (d durableStore) HeldElsewhere(id string) (bool, error) { return d.p.HeldElsewhere(id) }

var _ subagent.ProblemChecker = durableStore{}

// Problem says why a stored child's log has no readable header (the
// catalog's row for a child its parent's log names).
func (d durableStore) Problem(ctx context.Context, id string) (string, bool) {
	u, ok := d.p.Check(ctx, id)
	if !ok {
		return "", false
	}
	return persistence.UnreadableDamage(u).Text(), true
}

var (
	_ subagent.DamageDescriber = durableStore{}
	_ subagent.RepairDescriber = durableStore{}
)

// DescribeRepaired words a repaired child log for its catalog row as
// every command does.
func (d durableStore) DescribeRepaired(id string, sum session.RepairedData) string {
	return persistence.RepairedDamage(id, LogPath(d.p, id), sum).Text()
}

// Describe words a damaged child log for its catalog row (agents,
// list_agents, the subagents extension) as every command does.
func (d durableStore) Describe(err error) string {
	if dmg, ok := persistence.DamageOf(err); ok {
		return dmg.Text()
	}
	return ""
}

func (d durableStore) Flush(ctx context.Context, id string) error { return d.p.Flush(ctx, id) }

// HeaderReader is the index's fallback: persistence's own header read.
func HeaderReader(p *persistence.Store) projcache.HeaderReader {
	return func(ctx context.Context, id string) (session.Header, error) {
		e, err := p.Entry(ctx, id)
		return e.Header, err
	}
}

// journal is every agent's agent.Journal: persistence makes the log
// durable; when a turn has ended, the projection cache records the
// session's values; the ACP server says when a call is on the wire.
type journal struct{ a *App }

var (
	_ agent.Journal    = journal{}
	_ agent.JournalErr = journal{}
)

func (j journal) SyncTo(ctx context.Context, id string, seq int64) error {
	if err := j.a.Persist.SyncTo(ctx, id, seq); err != nil {
		return err
	}
	if s, ok := j.a.Sessions.Get(id); ok && turnEnded(s) {
		j.a.checkpointCache(ctx, s)
	}
	return nil
}

// WriteErr is persistence's sticky write failure of session id (the
// loop ends a streaming turn on it: agent.JournalErr).
func (j journal) WriteErr(id string) error { return j.a.Persist.Err(id) }

// Shown: a tool runs only after its tool_call is on the wire (the
// emitter sends it once durable).
func (j journal) Shown(ctx context.Context, id string, _ int64) error {
	if j.a.Server == nil {
		return nil
	}
	return j.a.Server.Shown(ctx, id)
}

// LogPath is the file of session id's log (named in damage wording).
func LogPath(p *persistence.Store, id string) string {
	return filepath.Join(p.Dir(), id+".jsonl")
}

// Reason says what is wrong, for a row or a message: a damaged log in
// the one wording of persistence.Damage, other failures with their real
// path where there is one, never a package prefix.
func Reason(err error) string {
	var (
		le *persistence.LockedError
		be *persistence.BackupError
	)
	if d, ok := persistence.DamageOf(err); ok {
		return d.Text()
	}
	switch {
	case errors.As(err, &le):
		return "open for writing by another process (" + le.Path + ")"
	case errors.As(err, &be):
		return strings.TrimPrefix(be.Error(), "persistence: ")
	}
	return strings.ReplaceAll(err.Error(), "persistence: ", "")
}
