package subagent

// This file defines the durable subagent catalog: ListChildren and
// ListDescendants over the live-preferred corpus of live sessions and
// persisted headers, resolved through the projection ladder. See
// subagent-contract.md §3.

import (
	"cmp"
	"context"
	"encoding/json"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/subagent/budgets"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// DefaultConcurrency bounds the cold reads of one listing.
const DefaultConcurrency = 4

// PersistedEntry is one persisted session as enumerated by storage: its
// header and the current size of its log file in bytes. An index may add
// Values: checkpointed projection values valid for exactly Size bytes of
// log, used like a projection cache hit (never an authorization source).
type PersistedEntry struct {
	Header session.Header
	Size   int64
	Values map[string]json.RawMessage
}

// CatalogIndex is a derived index of the persisted corpus. Scan returns
// what SessionReader.List would (every stored session with a readable
// header, each validated against its log), leaving out the sessions for
// which skip returns true, so that live sessions cost nothing. Deleting or
// damaging the index must only make Scan slower, never different.
type CatalogIndex interface {
	Scan(ctx context.Context, skip func(id string) bool) ([]PersistedEntry, error)
}

// SessionReader is what the catalog needs from session persistence. List
// enumerates headers without reading logs; Inspect reads one log without
// repairing or locking it (a torn tail is skipped, an interrupted turn may
// get in-memory closers). Both honour ctx.
type SessionReader interface {
	List(ctx context.Context) ([]PersistedEntry, error)
	Inspect(ctx context.Context, id string) (session.Header, []session.Event, error)
}

// ProjectionCache serves checkpointed projection values of a persisted
// session whose log still has the given size. A miss is (nil, nil). It is
// derived data and never an authorization source: the catalog trusts only a
// non-null identity that passes the seq gate, and swallows every error.
type ProjectionCache interface {
	Get(h session.Header, size int64) (map[string]json.RawMessage, error)
}

// Catalog lists the session-backed subagents of a parent without loading
// or resuming any of them. Sessions and Projections are required (a listing
// without them fails with a typed error); Persisted and Cache are optional:
// without Persisted only live sessions are listed. The projection registry
// must have the identity unit registered (RegisterProjections).
//
// A Catalog holds no state of its own and is safe for concurrent use; it
// never writes anything.
type Catalog struct {
	Sessions    *session.Store
	Projections *projection.Registry
	Persisted   SessionReader
	Cache       ProjectionCache
	// Index, when set, replaces Persisted.List as the source of the
	// persisted corpus (Persisted is still used to read cold logs).
	Index CatalogIndex
	// Concurrency bounds the cold reads of one listing (DefaultConcurrency
	// when 0 or negative).
	Concurrency int
	// Prices price the rows' usage (nil: the built-in table).
	Prices *budget.Prices
	// Waiting, when set, reports a start still waiting for a background
	// slot in this process (the runtime sets it): a queued start the
	// parent's log records is listed as not started only when it is not.
	Waiting func(id string) bool

	delegated delegations // the live parents' named children (accounted.go)
}

// record is one session of the merged corpus.
type record struct {
	header session.Header
	size   int64                      // persisted log size (persisted-only records)
	values map[string]json.RawMessage // indexed projection values (persisted-only records)
	live   *session.Session           // nil when only persisted
}

// corpus is the live-preferred merge of persisted and live sessions.
type corpus struct {
	records map[string]*record
	// subagentParents holds every parentSession named by an
	// origin-subagent record (the hasChildren fact).
	subagentParents map[string]bool
	// corrupt holds the records whose parent chain loops (a self-parent
	// or a cycle): they are listed as corrupt and never walked.
	corrupt map[string]string
}

func cancelled(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return wrapError(CodeCancelled, "subagent listing was cancelled", context.Cause(ctx))
}

// prepare checks the configuration and builds the corpus, in the order of
// subagent-contract.md §3.1: configuration errors win over a pre-cancelled
// ctx, and a pre-cancelled ctx never reaches persistence.
func (c *Catalog) prepare(ctx context.Context) (*corpus, error) {
	if c == nil || c.Projections == nil {
		return nil, NewError(CodeProjectionsUnavailable, "listing subagents requires the session projection registry")
	}
	if c.Sessions == nil {
		return nil, NewError(CodeSessionStoreUnavailable, "listing subagents requires the session store")
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	persisted, live, err := c.enumerate(ctx)
	if err != nil {
		if cerr := cancelled(ctx); cerr != nil {
			return nil, cerr
		}
		// Without a trustworthy candidate set there is no listing: the
		// backend's own error goes out unwrapped.
		return nil, err
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	co := &corpus{records: make(map[string]*record, len(persisted)+len(live)), subagentParents: make(map[string]bool)}
	for _, e := range persisted {
		co.records[e.Header.ID] = &record{header: e.Header, size: e.Size, values: e.Values}
	}
	// Live sessions override persisted records wholesale (no header
	// reconciliation; subagent-contract.md §3.7 item 3).
	for _, s := range live {
		co.records[s.ID()] = &record{header: s.Header(), live: s}
	}
	parentOf := make(map[string]string, len(co.records))
	for _, r := range co.records {
		parentOf[r.header.ID] = r.header.ParentSession
		if r.header.Origin == session.OriginSubagent && r.header.ParentSession != "" && r.header.ParentSession != r.header.ID {
			co.subagentParents[r.header.ParentSession] = true
		}
	}
	co.corrupt = session.CorruptParents(parentOf)
	return co, nil
}

// enumerate returns the persisted corpus and then the live sessions. With
// an index, the sessions live before the scan are skipped by it; if one of
// them has left the live store by the time the live list is taken, its
// persisted record is needed after all, and the scan is repeated in full.
func (c *Catalog) enumerate(ctx context.Context) ([]PersistedEntry, []*session.Session, error) {
	switch {
	case c.Persisted == nil:
		return nil, c.Sessions.List(), nil
	case c.Index == nil:
		persisted, err := c.Persisted.List(ctx)
		if err != nil {
			return nil, nil, err
		}
		return persisted, c.Sessions.List(), nil
	}
	before := c.Sessions.List()
	wasLive := make(map[string]bool, len(before))
	for _, s := range before {
		wasLive[s.ID()] = true
	}
	persisted, err := c.Index.Scan(ctx, func(id string) bool { return wasLive[id] })
	if err != nil {
		return nil, nil, err
	}
	live := c.Sessions.List()
	stillLive := 0
	for _, s := range live {
		if wasLive[s.ID()] {
			stillLive++
		}
	}
	if stillLive == len(before) {
		return persisted, live, nil
	}
	if persisted, err = c.Index.Scan(ctx, nil); err != nil {
		return nil, nil, err
	}
	return persisted, c.Sessions.List(), nil
}

// byCreation orders records by createdAt, then by id in plain byte order.
// (The reference implementation used locale collation, which equals byte
// order for the lowercase UUIDs the runtime mints; byte order is total and
// locale-independent for any id.)
func byCreation(a, b *record) int {
	if c := cmp.Compare(a.header.CreatedAt, b.header.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.header.ID, b.header.ID)
}

// ListChildren returns the direct session-backed subagents of parentID in
// (createdAt, id) order: one child row per child with an identity, one
// diagnostic row per child that could not be read or classified, nothing
// for a live child still in its creation window. An unknown parent lists
// as empty. Errors: *SubagentError with CodeProjectionsUnavailable,
// CodeSessionStoreUnavailable or CodeCancelled, or the persisted listing's
// own error.
func (c *Catalog) ListChildren(ctx context.Context, parentID string) ([]ListEntry, error) {
	co, err := c.prepare(ctx)
	if err != nil {
		return nil, err
	}
	var cands []*record
	for _, r := range co.records {
		// A session naming itself as its parent is never its own child.
		if r.header.ParentSession == parentID && r.header.Origin == session.OriginSubagent && r.header.ID != parentID {
			cands = append(cands, r)
		}
	}
	slices.SortFunc(cands, byCreation)
	rows, err := c.resolve(ctx, co, cands)
	if err != nil {
		return nil, err
	}
	out := make([]ListEntry, 0, len(rows))
	listed := make(map[string]bool, len(rows))
	for _, row := range rows {
		if row != nil {
			out = append(out, *row)
			listed[row.ID] = true
		}
	}
	// Every child the parent's own log names gets a row, and so does a
	// start it records as queued that never started.
	names := c.parentChildren(ctx, co, parentID)
	out = append(out, c.unaccounted(ctx, co, parentID, names.ids, listed)...)
	out = append(out, c.notStarted(co, names.pending, listed)...)
	// An external child's children are the ones its agent announced.
	out = append(out, nestedRows(&External{Nested: names.nested})...)
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// ListDescendants returns every session-backed subagent below rootID in
// stable pre-order, each positioned by its durable direct parent and its
// depth (direct children have depth 1). Ordinary sessions and one-shot
// children are walked through; only origin-subagent sessions are emitted.
// The walk is iterative, so arbitrarily deep chains are fine. A session
// whose parent chain loops (session.CorruptParents) is listed as a corrupt
// diagnostic and not walked; a self-parent is nobody's child; a visited set
// guards the rest. Errors as ListChildren.
// It is long because the walk, the resolution of its rows and the
// placement of the children only a log names share the same maps
// (positions, depths, rows by id); apart, each would take and return
// them all.
func (c *Catalog) ListDescendants(ctx context.Context, rootID string) ([]DescendantEntry, error) {
	co, err := c.prepare(ctx)
	if err != nil {
		return nil, err
	}
	children := make(map[string][]*record)
	for _, r := range co.records {
		if p := r.header.ParentSession; p != "" && p != r.header.ID {
			children[p] = append(children[p], r)
		}
	}
	for _, list := range children {
		slices.SortFunc(list, byCreation)
	}
	type frame struct {
		rec   *record
		depth int
	}
	var stack []frame
	push := func(parent string, depth int) {
		list := children[parent]
		for i := len(list) - 1; i >= 0; i-- {
			stack = append(stack, frame{list[i], depth})
		}
	}
	visited := map[string]bool{rootID: true}
	push(rootID, 1)
	var positioned []frame
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		id := f.rec.header.ID
		if visited[id] {
			continue
		}
		visited[id] = true
		if f.rec.header.Origin == session.OriginSubagent {
			positioned = append(positioned, f)
		}
		if _, bad := co.corrupt[id]; bad {
			continue // a parent cycle: listed as corrupt, not walked
		}
		push(id, f.depth+1)
	}
	cands := make([]*record, len(positioned))
	for i, f := range positioned {
		cands[i] = f.rec
	}
	rows, err := c.resolve(ctx, co, cands)
	if err != nil {
		return nil, err
	}
	out := make([]DescendantEntry, 0, len(rows))
	listed := make(map[string]bool, len(rows))
	at := make(map[string]int, len(rows)) // id -> index in out
	for i, row := range rows {
		if row != nil {
			at[row.ID] = len(out)
			out = append(out, DescendantEntry{ListEntry: *row, ParentID: positioned[i].rec.header.ParentSession, Depth: positioned[i].depth})
			listed[row.ID] = true
		}
	}
	// Every child a walked session's own log names gets a row, after the
	// walk, positioned under the session whose log names it. The root's
	// log is read (one read, as ListChildren); below it only live
	// sessions' logs, which cost nothing: reading every cold descendant's
	// log would make a warm listing read the whole tree.
	walked := []string{rootID}
	for _, f := range positioned {
		if f.rec.live != nil {
			walked = append(walked, f.rec.header.ID)
		}
	}
	depthOf := map[string]int{rootID: 0}
	for _, f := range positioned {
		depthOf[f.rec.header.ID] = f.depth
	}
	for _, pid := range walked {
		if _, bad := co.corrupt[pid]; bad {
			continue
		}
		pn := c.parentChildren(ctx, co, pid)
		names := pn.ids
		// A named child the walk reached under another parent (its
		// header's) keeps that position but gets the row ListChildren of
		// pid gives it: the scopes agree on it.
		for _, id := range names {
			if i, ok := at[id]; ok && id != pid && out[i].ParentID != pid {
				out[i].ListEntry = namedElsewhere(co, pid, co.records[id])
			}
		}
		for _, e := range append(c.unaccounted(ctx, co, pid, names, listed), c.notStarted(co, pn.pending, listed)...) {
			listed[e.ID] = true
			out = append(out, DescendantEntry{ListEntry: e, ParentID: pid, Depth: depthOf[pid] + 1})
		}
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	return withNested(out), nil
}

// withNested places the nested rows of each external child (the
// children its agent announced) right after it, one level deeper.
func withNested(rows []DescendantEntry) []DescendantEntry {
	n := 0
	for _, r := range rows {
		if r.External != nil {
			n += len(r.External.Nested)
		}
	}
	if n == 0 {
		return rows
	}
	out := make([]DescendantEntry, 0, len(rows)+n)
	for _, r := range rows {
		out = append(out, r)
		for _, e := range nestedRows(r.External) {
			out = append(out, DescendantEntry{ListEntry: e, ParentID: r.ID, Depth: r.Depth + 1})
		}
	}
	return out
}

// resolve computes one row per candidate (nil = omitted), aligned with
// cands whatever order the cold reads finish in.
func (c *Catalog) resolve(ctx context.Context, co *corpus, cands []*record) ([]*ListEntry, error) {
	rows := make([]*ListEntry, len(cands))
	var cold []int
	for i, r := range cands {
		if _, bad := co.corrupt[r.header.ID]; bad {
			rows[i] = diagnostic(r, ReasonCorrupt)
			continue
		}
		if r.live == nil {
			cold = append(cold, i)
			continue
		}
		rows[i] = c.resolveLive(r, co.subagentParents[r.header.ID])
	}
	if len(cold) > 0 {
		if err := c.resolveColdAll(ctx, co, cands, cold, rows); err != nil {
			return nil, err
		}
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	return rows, nil
}

// resolveLive is rung 1: the live projection snapshot, with no log read.
func (c *Catalog) resolveLive(r *record, hasChildren bool) *ListEntry {
	snap, err := c.Projections.Snapshot(r.live)
	if err != nil {
		return diagnostic(r, ReasonCorrupt)
	}
	id, err := DecodeIdentity(snap.Values[KeyIdentity])
	if err != nil {
		return diagnostic(r, ReasonCorrupt)
	}
	if id == nil {
		return nil // creation window: not yet (or no longer) a subagent
	}
	row := child(r, id, ActivityRunning, hasChildren)
	row.Damage = c.repairedOf(r.header.ID, snap.Values)
	row.Usage = c.usageOf(snap.Values)
	row.External = DecodeExternal(snap.Values[KeyExternal])
	row.Question = questionOf(snap.Values)
	return row
}

// resolveColdAll resolves the cold candidates with a bounded pool of
// workers pulling from one FIFO queue. The first cancellation stops the
// queue and fails the listing; the pool is always waited for, so no read
// outlives the call (siblings' in-flight reads see the same cancelled ctx).
func (c *Catalog) resolveColdAll(ctx context.Context, co *corpus, cands []*record, cold []int, rows []*ListEntry) error {
	workers := c.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	workers = min(workers, len(cold))
	var (
		next     atomic.Int64
		failOnce sync.Once
		failed   atomic.Bool
		failure  error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(cold) {
					return
				}
				i := cold[k]
				row, err := c.resolveCold(ctx, cands[i], co.subagentParents[cands[i].header.ID])
				if err != nil {
					failOnce.Do(func() { failure = err; failed.Store(true) })
					return
				}
				rows[i] = row
			}
		})
	}
	wg.Wait()
	return failure
}

// resolveCold is rungs 2 and 3 for one persisted-only candidate. Its only
// error is CANCELLED.
func (c *Catalog) resolveCold(ctx context.Context, r *record, hasChildren bool) (*ListEntry, error) {
	if id, values := c.cachedIdentity(r); id != nil && id.Seq >= int64(r.header.SeedLength) {
		row := child(r, id, ActivityInactive, hasChildren)
		row.Damage = c.repairedOf(r.header.ID, values)
		row.Usage = c.usageOf(values)
		row.External = DecodeExternal(values[KeyExternal])
		row.Question = questionOf(values)
		return row, nil
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	h, events, err := c.Persisted.Inspect(ctx, r.header.ID)
	if err != nil {
		if cerr := cancelled(ctx); cerr != nil {
			return nil, cerr
		}
		// Not memoized: the next listing reads it again.
		row := diagnostic(r, ReasonUnavailable)
		if dd, ok := c.Persisted.(DamageDescriber); ok {
			row.Detail = dd.Describe(err)
		}
		return row, nil
	}
	if err := cancelled(ctx); err != nil {
		return nil, err
	}
	if !sameLifecycle(h, r.header) {
		// A re-published id must not leak into the old parent's listing.
		return diagnostic(r, ReasonCorrupt), nil
	}
	snap, err := c.Projections.Restore(events)
	if err != nil {
		return diagnostic(r, ReasonCorrupt), nil
	}
	id, err := DecodeIdentity(snap.Values[KeyIdentity])
	if err != nil || id == nil {
		// Settled debris: a missing, malformed or unknown-version
		// descriptor on a child that is no longer being created (a
		// repair that dropped it says so).
		row := diagnostic(r, ReasonCorrupt)
		row.Detail = c.repairedOf(r.header.ID, snap.Values)
		return row, nil
	}
	row := child(r, id, ActivityInactive, hasChildren)
	row.Damage = c.repairedOf(r.header.ID, snap.Values)
	row.Usage = c.usageOf(snap.Values)
	row.External = DecodeExternal(snap.Values[KeyExternal])
	row.Question = questionOf(snap.Values)
	return row, nil
}

// usageOf prices the subagentUsage value among values; nil when there is
// none (no usage reported, or a cache written without the unit).
func (c *Catalog) usageOf(values map[string]json.RawMessage) *budget.Usage {
	l, ok := budgets.DecodeLedger(values[budgets.KeyUsage])
	if !ok || len(l.Routes) == 0 {
		return nil
	}
	u := l.Usage(c.Prices)
	return &u
}

// cachedIdentity is rung 2: the indexed values of the record, then the
// projection cache; values are the ones the identity came from. Every
// failure, panic included, is a miss.
func (c *Catalog) cachedIdentity(r *record) (id *Identity, values map[string]json.RawMessage) {
	if r.values != nil {
		if id, err := DecodeIdentity(r.values[KeyIdentity]); err == nil && id != nil {
			return id, r.values
		}
	}
	if c.Cache == nil {
		return nil, nil
	}
	defer func() {
		if recover() != nil {
			id, values = nil, nil
		}
	}()
	values, err := c.Cache.Get(r.header, r.size)
	if err != nil || values == nil {
		return nil, nil
	}
	id, err = DecodeIdentity(values[KeyIdentity])
	if err != nil {
		return nil, nil
	}
	return id, values
}

// repairedOf words the repair a child's log records (the repaired
// projection unit among its values, when registered) through the
// Persisted reader's RepairDescriber; "" for a log never repaired.
func (c *Catalog) repairedOf(id string, values map[string]json.RawMessage) string {
	rd, ok := c.Persisted.(RepairDescriber)
	raw := values[projection.KeyRepaired]
	if !ok || len(raw) == 0 {
		return ""
	}
	var sum *session.RepairedData
	if json.Unmarshal(raw, &sum) != nil || sum == nil {
		return ""
	}
	return rd.DescribeRepaired(id, *sum)
}

// sameLifecycle is the lifecycle witness: the inspected header must equal
// the enumerated one on every identity-bearing field.
func sameLifecycle(a, b session.Header) bool {
	return a.Version == b.Version && a.ID == b.ID && a.CreatedAt == b.CreatedAt && a.Cwd == b.Cwd &&
		a.ParentSession == b.ParentSession && a.SeedLength == b.SeedLength && a.DelegationDepth == b.DelegationDepth
}

func child(r *record, id *Identity, activity Activity, hasChildren bool) *ListEntry {
	return &ListEntry{Kind: KindChild, ID: r.header.ID, Mode: id.Mode, Label: id.Label, Activity: activity, HasChildren: hasChildren, Worktree: id.Worktree}
}

func diagnostic(r *record, reason Reason) *ListEntry {
	return &ListEntry{Kind: KindDiagnostic, ID: r.header.ID, Reason: reason}
}
