package subagent_test

// Tests of Catalog.ListChildren (subagent-contract.md §5.1) and
// Catalog.ListDescendants (§5.2). Test names follow the behaviour; the
// reference case numbers are in the comments.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

func listChildren(t *testing.T, c *subagent.Catalog, parent string) []subagent.ListEntry {
	t.Helper()
	rows, err := c.ListChildren(t.Context(), parent)
	if err != nil {
		t.Fatalf("ListChildren(%s): %v", parent, err)
	}
	return rows
}

func wantCode(t *testing.T, err error, code subagent.Code) {
	t.Helper()
	var se *subagent.SubagentError
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("error = %v (%T); want SubagentError %s", err, err, code)
	}
	if se.Name() != "SubagentError" || se.ErrorCode() != string(code) {
		t.Fatalf("Name/ErrorCode = %q/%q", se.Name(), se.ErrorCode())
	}
}

// #1
func TestListChildrenLiveOnlyWithoutPersistence(t *testing.T) {
	f := newCatFix(t)
	f.cat.Persisted = nil
	s := f.liveChild(childHeader("live-only-child", "live-only-parent", 0), descPayload("live-only child", 2))
	wantJSON(t, listChildren(t, f.cat, "live-only-parent"),
		`[{"kind":"child","id":"`+s.ID()+`","mode":"continuable","label":"live-only child","activity":"running","hasChildren":false}]`)
}

// #2, #48, §6 item 13
func TestListingWithoutProjectionsFailsFirstEvenWithZeroChildrenAndCancelledContext(t *testing.T) {
	f := newCatFix(t)
	f.cat.Projections = nil
	f.cat.Sessions = nil
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.cat.ListChildren(ctx, "parent")
	wantCode(t, err, subagent.CodeProjectionsUnavailable)
	_, err = f.cat.ListDescendants(ctx, "parent") // #59
	wantCode(t, err, subagent.CodeProjectionsUnavailable)
	var nilCatalog *subagent.Catalog
	_, err = nilCatalog.ListChildren(ctx, "parent")
	wantCode(t, err, subagent.CodeProjectionsUnavailable)
	if f.disk.listCalls.Load() != 0 {
		t.Fatal("persistence was listed")
	}
}

// #3
func TestListingWithoutSessionStoreFailsSecond(t *testing.T) {
	f := newCatFix(t)
	f.cat.Sessions = nil
	_, err := f.cat.ListChildren(t.Context(), "no-store-parent")
	wantCode(t, err, subagent.CodeSessionStoreUnavailable)
}

// #4
func TestListChildrenSettledContinuableChildIsInactive(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("c1", "parent", 0), "summarize the doc")
	wantJSON(t, listChildren(t, f.cat, "parent"),
		`[{"kind":"child","id":"c1","mode":"continuable","label":"summarize the doc","activity":"inactive","hasChildren":false}]`)
}

// #5, #9
func TestListChildrenOneShotRowsOmitAbsentLabel(t *testing.T) {
	f := newCatFix(t)
	// A one-shot child appends its descriptor inside its first turn.
	one, _ := f.store.Create(childHeader("a-one-shot", "parent", 5), session.CreateOptions{})
	mustAppend(one, session.TypeTurnStart, `{"turn":1}`)
	mustAppend(one, session.TypeDescriptor, oneShotPayload(""))
	mustAppend(one, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	f.settle(one)
	f.settledChild(childHeader("b-continuable", "parent", 6), "continuable child")
	f.author(childHeader("c-labelled", "parent", 7), childEvents(oneShotPayload("labeled one-shot")))
	wantJSON(t, listChildren(t, f.cat, "parent"), `[
		{"kind":"child","id":"a-one-shot","mode":"one-shot","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"b-continuable","mode":"continuable","label":"continuable child","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"c-labelled","mode":"one-shot","label":"labeled one-shot","activity":"inactive","hasChildren":false}]`)
}

// #6
func TestListChildrenAcceptsParentThatExistsOnlyOnDisk(t *testing.T) {
	f := newCatFix(t)
	f.author(session.Header{ID: "cold-parent", CreatedAt: 1}, []session.Event{ev(session.TypeTurnStart, 0, `{"turn":1}`)})
	f.author(childHeader("cold-child", "cold-parent", 2), childEvents(descPayload("persisted parent case", 2)))
	wantJSON(t, listChildren(t, f.cat, "cold-parent"),
		`[{"kind":"child","id":"cold-child","mode":"continuable","label":"persisted parent case","activity":"inactive","hasChildren":false}]`)
	if rows := listChildren(t, f.cat, "no-such-parent"); len(rows) != 0 { // §3.7 item 5
		t.Fatalf("unknown parent listed %v", rows)
	}
}

// #7, §6 item 16: createdAt ascending, ties by id in byte order; ordinary
// forks are not candidates.
func TestListChildrenOrdersByCreatedAtThenIDBytesAndSkipsForks(t *testing.T) {
	f := newCatFix(t)
	parent, _ := f.store.Create(session.Header{ID: "parent", CreatedAt: 1}, session.CreateOptions{})
	mustAppend(parent, session.TypeTurnStart, `{"turn":1}`)
	mustAppend(parent, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	for _, c := range []struct {
		id string
		at int64
	}{{"child-0009", 9}, {"child-0002", 5}, {"child-0001", 5}, {"Child-0003", 5}} {
		f.liveChild(childHeader(c.id, "parent", c.at), descPayload(c.id, 2))
	}
	fork, err := f.store.Fork("parent", session.ForkOptions{Boundary: -1, ChildID: "plain-fork"})
	if err != nil {
		t.Fatal(err)
	}
	// The fork has an identity of its own, so only the origin filter keeps
	// it out (without a descriptor it would be dropped as still creating).
	mustAppend(fork, session.TypeDescriptor, descPayload("plain-fork", 2))
	if h := fork.Header(); h.ParentSession != "parent" || h.Origin == session.OriginSubagent {
		t.Fatalf("fork header %+v: want parent %q and an ordinary origin", h, "parent")
	}
	rows := listChildren(t, f.cat, "parent")
	var ids []string
	for _, r := range rows {
		if r.Kind != subagent.KindChild {
			t.Fatalf("row %+v is not a child", r)
		}
		ids = append(ids, r.ID)
	}
	// Byte order puts "C" (0x43) before "c" (0x63).
	if want := fmt.Sprint([]string{"Child-0003", "child-0001", "child-0002", "child-0009"}); fmt.Sprint(ids) != want {
		t.Fatalf("order %v; want %s", ids, want)
	}
}

// #8
func TestListChildrenOmitsLiveChildInCreationWindow(t *testing.T) {
	f := newCatFix(t)
	f.liveChild(childHeader("creating", "parent", 1), "")
	if rows := listChildren(t, f.cat, "parent"); len(rows) != 0 {
		t.Fatalf("rows %v; want none", rows)
	}
}

// #10, #35: a live child is never inspected, each cold child exactly once.
func TestListChildrenReadsEachColdChildOnceAndLiveChildrenNever(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("settled", "parent", 1), "settled child")
	f.author(childHeader("authored", "parent", 2), childEvents(descPayload("authored child", 2)))
	live := f.liveChild(childHeader("live", "parent", 3), descPayload("live child", 2))
	// A live session that is also persisted is served live.
	f.disk.put(live.Header(), live.MustEvents())
	wantJSON(t, listChildren(t, f.cat, "parent"), `[
		{"kind":"child","id":"settled","mode":"continuable","label":"settled child","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"authored","mode":"continuable","label":"authored child","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"live","mode":"continuable","label":"live child","activity":"running","hasChildren":false}]`)
	for id, want := range map[string]int64{"settled": 1, "authored": 1, "live": 0} {
		if got := f.disk.inspectedCount(id); got != want {
			t.Errorf("%s inspected %d times; want %d", id, got, want)
		}
	}
	if f.disk.listCalls.Load() != 1 {
		t.Errorf("List called %d times; want 1", f.disk.listCalls.Load())
	}
}

// #11, §3.7 item 2
func TestListChildrenLastDescriptorWins(t *testing.T) {
	f := newCatFix(t)
	events := childEvents(descPayload("twice", 2))
	events = append(events[:3], ev(session.TypeDescriptor, 3, descPayload("twice again", 2)), ev(session.TypeTurnEnd, 4, `{"turn":1,"reason":{"kind":"completed"}}`))
	f.author(childHeader("doubled", "parent", 1), events)
	f.author(childHeader("sibling", "parent", 2), childEvents(descPayload("sibling", 2)))
	wantJSON(t, listChildren(t, f.cat, "parent"), `[
		{"kind":"child","id":"doubled","mode":"continuable","label":"twice again","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"sibling","mode":"continuable","label":"sibling","activity":"inactive","hasChildren":false}]`)
}

// #12
func TestLiveMalformedDescriptorResetsIdentityToPresentNull(t *testing.T) {
	f := newCatFix(t)
	s, _ := f.store.Create(childHeader("resetting", "parent", 1), session.CreateOptions{})
	mustAppend(s, session.TypeTurnStart, `{"turn":1}`)
	mustAppend(s, session.TypeDescriptor, descPayload("was valid", 2))
	snap, err := f.reg.Snapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(snap.Values["subagent"]); got != `{"mode":"continuable","label":"was valid","seq":1}` {
		t.Fatalf("identity %s", got)
	}
	mustAppend(s, session.TypeDescriptor, `{"version":2,"mode":"continuable","provider":7,"label":"x"}`)
	snap, err = f.reg.Snapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(snap.Values)
	var back map[string]json.RawMessage
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if v, ok := back["subagent"]; !ok || string(v) != "null" {
		t.Fatalf("identity after malformed descriptor: %s (present %v); want a present null", v, ok)
	}
	if rows := listChildren(t, f.cat, "parent"); len(rows) != 0 {
		t.Fatalf("rows %v; want none (running without identity)", rows)
	}
}

// #13, #25, #26, and a descriptor-less settled child (§6 item 20).
func TestListChildrenSettledChildWithoutValidIdentityIsCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		events []session.Event
	}{
		{"valid then malformed", append(childEvents(descPayload("fine", 2))[:3],
			ev(session.TypeDescriptor, 3, `{"version":2,"mode":"continuable","provider":7,"label":"x"}`))},
		{"malformed only", childEvents(`{"version":2,"mode":"continuable","provider":7}`)},
		{"unknown version", childEvents(descPayload("from the future", 3))},
		{"no descriptor", []session.Event{ev(session.TypeTurnStart, 0, `{"turn":1}`), ev(session.TypeTurnEnd, 1, `{"turn":1,"reason":{"kind":"completed"}}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newCatFix(t)
			f.author(childHeader("broken", "parent", 1), tt.events)
			wantJSON(t, listChildren(t, f.cat, "parent"), `[{"kind":"diagnostic","id":"broken","reason":"corrupt"}]`)
		})
	}
}

func ownedCache(id subagent.Identity) cacheFunc {
	return func(h session.Header, size int64) (map[string]json.RawMessage, error) {
		raw, _ := json.Marshal(id)
		return map[string]json.RawMessage{"subagent": raw}, nil
	}
}

// #14
func TestListChildrenCacheHitSkipsInspection(t *testing.T) {
	f := newCatFix(t)
	f.author(childHeader("cached", "parent", 1), childEvents(descPayload("disk label", 2)))
	f.cat.Cache = ownedCache(subagent.Identity{Mode: subagent.ModeContinuable, Label: "cached own", Seq: 2})
	wantJSON(t, listChildren(t, f.cat, "parent"),
		`[{"kind":"child","id":"cached","mode":"continuable","label":"cached own","activity":"inactive","hasChildren":false}]`)
	if n := f.disk.inspectCalls.Load(); n != 0 {
		t.Fatalf("inspected %d times; want 0", n)
	}
}

// forkChildEvents is a fork child's log: a 4-event parent prefix carrying
// an ancestor descriptor at seq 2, then its own seed and descriptor at 5.
func forkChildEvents(ancestor, own string) []session.Event {
	events := append(childEvents(descPayload(ancestor, 2)), ev(session.TypeEndSeed, 4, `{}`))
	if own != "" {
		events = append(events,
			ev(session.TypeDescriptor, 5, descPayload(own, 2)),
			ev(session.TypeEndSeed, 6, `{}`),
			ev(session.TypeTurnStart, 7, `{"turn":2}`),
			ev(session.TypeTurnEnd, 8, `{"turn":2,"reason":{"kind":"completed"}}`))
	}
	return events
}

// #15
func TestListChildrenCacheSeqGateRefusesAncestorIdentity(t *testing.T) {
	f := newCatFix(t)
	h := childHeader("forked", "parent", 1)
	h.SeedLength = 4
	f.author(h, forkChildEvents("ancestor label", "own label"))
	f.cat.Cache = ownedCache(subagent.Identity{Mode: subagent.ModeContinuable, Label: "ancestor label", Seq: 2})
	wantJSON(t, listChildren(t, f.cat, "parent"),
		`[{"kind":"child","id":"forked","mode":"continuable","label":"own label","activity":"inactive","hasChildren":false}]`)
	if n := f.disk.inspectCalls.Load(); n != 1 {
		t.Fatalf("inspected %d times; want 1", n)
	}
}

// #16–22, #57
func TestListChildrenLifecycleWitnessMismatchIsCorrupt(t *testing.T) {
	mutations := map[string]func(*session.Header){
		"version":         func(h *session.Header) { h.Version++ },
		"id":              func(h *session.Header) { h.ID = "another-lifecycle" },
		"createdAt":       func(h *session.Header) { h.CreatedAt++ },
		"cwd":             func(h *session.Header) { h.Cwd = "/elsewhere" },
		"parentSession":   func(h *session.Header) { h.ParentSession = "another-parent" },
		"seedLength":      func(h *session.Header) { h.SeedLength++ },
		"delegationDepth": func(h *session.Header) { h.DelegationDepth++ },
	}
	for field, mutate := range mutations {
		t.Run(field, func(t *testing.T) {
			f := newCatFix(t)
			f.settledChild(childHeader("healthy", "parent", 1), "healthy sibling")
			f.author(childHeader("reborn", "parent", 2), childEvents(descPayload("reborn child", 2)))
			f.disk.afterInspect = func(_ context.Context, id string, h *session.Header) error {
				if id == "reborn" {
					mutate(h)
				}
				return nil
			}
			wantJSON(t, listChildren(t, f.cat, "parent"), `[
				{"kind":"child","id":"healthy","mode":"continuable","label":"healthy sibling","activity":"inactive","hasChildren":false},
				{"kind":"diagnostic","id":"reborn","reason":"corrupt"}]`)
			drows, err := f.cat.ListDescendants(t.Context(), "parent")
			if err != nil {
				t.Fatal(err)
			}
			wantJSON(t, drows[1], `{"kind":"diagnostic","id":"reborn","reason":"corrupt","parentId":"parent","depth":1}`)
		})
	}
}

// #23, #37, #38, #39: every cache miss shape falls through to exactly one
// inspection per listing and gives the same row.
func TestListChildrenCacheMissesFallBackToOneInspection(t *testing.T) {
	tests := []struct {
		name  string
		cache subagent.ProjectionCache
	}{
		{"no cache service", nil},
		{"null sentinel", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
			return map[string]json.RawMessage{"subagent": json.RawMessage("null")}, nil
		})},
		{"absent key", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
			return map[string]json.RawMessage{}, nil
		})},
		{"miss", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) { return nil, nil })},
		{"poisoned row error", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
			return nil, errors.New("poisoned cache row")
		})},
		{"poisoned row panic", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
			panic("poisoned cache row")
		})},
		{"garbage identity", cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
			return map[string]json.RawMessage{"subagent": json.RawMessage(`{"mode":"sideways"}`)}, nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newCatFix(t)
			f.author(childHeader("cold", "parent", 1), childEvents(descPayload("actually valid", 2)))
			f.cat.Cache = tt.cache
			for i := int64(1); i <= 2; i++ {
				wantJSON(t, listChildren(t, f.cat, "parent"),
					`[{"kind":"child","id":"cold","mode":"continuable","label":"actually valid","activity":"inactive","hasChildren":false}]`)
				if n := f.disk.inspectCalls.Load(); n != i {
					t.Fatalf("after listing %d: inspected %d times", i, n)
				}
			}
		})
	}
}

// #24
func TestListChildrenUnreadableLogIsUnavailable(t *testing.T) {
	f := newCatFix(t)
	events := childEvents(descPayload("unreadable", 2))
	events[1].SurfaceOp = nil // a user/message without its required surfaceOp
	f.author(childHeader("unreadable", "parent", 1), events)
	wantJSON(t, listChildren(t, f.cat, "parent"), `[{"kind":"diagnostic","id":"unreadable","reason":"unavailable"}]`)
}

// #27, §3.7 item 1
func TestListChildrenStillbornForkListsAncestorIdentity(t *testing.T) {
	f := newCatFix(t)
	h := childHeader("stillborn", "parent", 1)
	h.SeedLength = 4
	f.author(h, forkChildEvents("ancestor label", "")[:4])
	wantJSON(t, listChildren(t, f.cat, "parent"),
		`[{"kind":"child","id":"stillborn","mode":"continuable","label":"ancestor label","activity":"inactive","hasChildren":false}]`)
}

// #28
func TestListChildrenKeepsChildOfUnmountedProvider(t *testing.T) {
	f := newCatFix(t)
	f.author(childHeader("orphan", "parent", 1), childEvents(`{"version":2,"mode":"continuable","provider":"not-mounted","label":"orphan provider"}`))
	wantJSON(t, listChildren(t, f.cat, "parent"),
		`[{"kind":"child","id":"orphan","mode":"continuable","label":"orphan provider","activity":"inactive","hasChildren":false}]`)
}

// #29, #30: a hostile unit poisons only the child it fails on, cold and live.
func TestListChildrenContainsHostileProjectionUnitPerChild(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(fmt.Sprintf("panics=%v", panics), func(t *testing.T) {
			f := newCatFix(t)
			if _, err := f.reg.Register(hostileUnit(panics)); err != nil {
				t.Fatal(err)
			}
			f.settledChild(childHeader("cold-healthy", "parent", 1), "healthy")
			f.author(childHeader("cold-poisoned", "parent", 2), childEvents(descPayload("poison me", 2)))
			f.liveChild(childHeader("live-healthy", "parent", 3), descPayload("healthy live", 2))
			f.liveChild(childHeader("live-poisoned", "parent", 4), descPayload("poison me", 2))
			wantJSON(t, listChildren(t, f.cat, "parent"), `[
				{"kind":"child","id":"cold-healthy","mode":"continuable","label":"healthy","activity":"inactive","hasChildren":false},
				{"kind":"diagnostic","id":"cold-poisoned","reason":"corrupt"},
				{"kind":"child","id":"live-healthy","mode":"continuable","label":"healthy live","activity":"running","hasChildren":false},
				{"kind":"diagnostic","id":"live-poisoned","reason":"corrupt"}]`)
		})
	}
}

// #31, §6 item 12
func TestListChildrenPersistedListingFailureFailsWholeCall(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("c1", "parent", 1), "fine")
	backend := errors.New("backend listing failed")
	f.disk.listHook = func(context.Context) error { return backend }
	_, err := f.cat.ListChildren(t.Context(), "parent")
	if err != backend {
		t.Fatalf("error %v; want the backend's own error, unwrapped", err)
	}
}

// #32
func TestListChildrenFailedReadIsUnavailableAndRetriedNextListing(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("healthy", "parent", 1), "healthy")
	f.author(childHeader("flaky", "parent", 2), childEvents(descPayload("flaky storage", 2)))
	var broken atomic.Bool
	broken.Store(true)
	f.disk.inspectHook = func(_ context.Context, id string) error {
		if id == "flaky" && broken.Load() {
			return errors.New("backend read failed")
		}
		return nil
	}
	wantJSON(t, listChildren(t, f.cat, "parent"), `[
		{"kind":"child","id":"healthy","mode":"continuable","label":"healthy","activity":"inactive","hasChildren":false},
		{"kind":"diagnostic","id":"flaky","reason":"unavailable"}]`)
	broken.Store(false)
	wantJSON(t, listChildren(t, f.cat, "parent")[1],
		`{"kind":"child","id":"flaky","mode":"continuable","label":"flaky storage","activity":"inactive","hasChildren":false}`)
}

// #33
func TestListChildrenCompactedAndUncompactedTwinsListIdentically(t *testing.T) {
	f := newCatFix(t)
	f.author(childHeader("twin-a", "parent", 1), childEvents(descPayload("twin child", 2)))
	compacted := append(childEvents(descPayload("twin child", 2)), session.Event{
		Type: session.TypeUserMessage, Seq: 4, Time: 1004,
		Data:            json.RawMessage(`{"id":"sum","role":"user","content":[{"type":"text","text":"summary"}],"source":{"kind":"plugin","plugin":"compact"}}`),
		SurfaceOp:       &session.SurfaceOp{Replace: true, Start: 1, End: 1},
		SourceEventSeqs: []int64{1},
	})
	f.author(childHeader("twin-b", "parent", 2), compacted)
	rows := listChildren(t, f.cat, "parent")
	if len(rows) != 2 || rows[0].ID != "twin-a" || rows[1].ID != "twin-b" {
		t.Fatalf("rows %+v", rows)
	}
	rows[1].ID = rows[0].ID
	if rows[0] != rows[1] {
		t.Fatalf("twins differ: %+v vs %+v", rows[0], rows[1])
	}
}

// #34, #40, #41, §6 item 10
func TestListChildrenHasChildrenCountsOriginGrandchildrenFromHeadersOnly(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("with-sub", "parent", 1), "has a subagent")
	f.author(childHeader("grandchild", "with-sub", 2), childEvents(descPayload("grandchild", 2)))
	f.settledChild(childHeader("with-fork", "parent", 3), "has a fork")
	f.author(session.Header{ID: "ordinary-grandchild", CreatedAt: 4, ParentSession: "with-fork"}, childEvents(descPayload("x", 2)))
	f.settledChild(childHeader("with-broken", "parent", 5), "has a broken subagent")
	f.author(childHeader("broken-grandchild", "with-broken", 6), childEvents(`{"version":2,"mode":"continuable","provider":7}`))
	wantJSON(t, listChildren(t, f.cat, "parent"), `[
		{"kind":"child","id":"with-sub","mode":"continuable","label":"has a subagent","activity":"inactive","hasChildren":true},
		{"kind":"child","id":"with-fork","mode":"continuable","label":"has a fork","activity":"inactive","hasChildren":false},
		{"kind":"child","id":"with-broken","mode":"continuable","label":"has a broken subagent","activity":"inactive","hasChildren":true}]`)
	for _, id := range []string{"grandchild", "ordinary-grandchild", "broken-grandchild"} {
		if n := f.disk.inspectedCount(id); n != 0 {
			t.Errorf("%s inspected %d times; want 0", id, n)
		}
	}
	wantJSON(t, listChildren(t, f.cat, "with-broken"), `[{"kind":"diagnostic","id":"broken-grandchild","reason":"corrupt"}]`)
}

// #36: a row checkpointed at settlement serves the next listing with no
// inspection; a later append invalidates it.
func TestListChildrenRealCacheHitAfterCheckpoint(t *testing.T) {
	f := newCatFix(t)
	cache, err := projcache.Open(t.TempDir(), f.reg)
	if err != nil {
		t.Fatal(err)
	}
	f.cat.Cache = cache
	s := f.runChild(childHeader("cached-child", "parent", 1), "cached child")
	f.disk.put(s.Header(), s.MustEvents())
	wrote, err := cache.Checkpoint(t.Context(), s, int64(s.Len()), f.disk.size(s.ID()))
	if err != nil || !wrote {
		t.Fatalf("checkpoint = %v, %v", wrote, err)
	}
	if err := f.store.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"child","id":"cached-child","mode":"continuable","label":"cached child","activity":"inactive","hasChildren":false}]`
	wantJSON(t, listChildren(t, f.cat, "parent"), want)
	if n := f.disk.inspectCalls.Load(); n != 0 {
		t.Fatalf("inspected %d times on a cache hit", n)
	}
	// The log grows on disk (another process appended): the row is stale.
	events := append(s.MustEvents(), ev(session.TypeTurnStart, int64(s.Len()), `{"turn":2}`))
	f.disk.put(s.Header(), events)
	wantJSON(t, listChildren(t, f.cat, "parent"), want)
	if n := f.disk.inspectCalls.Load(); n != 1 {
		t.Fatalf("inspected %d times after the log changed; want 1", n)
	}
}

// #42, #58
func TestListingWithPreCancelledContextNeverReachesPersistence(t *testing.T) {
	f := newCatFix(t)
	f.settledChild(childHeader("c1", "parent", 1), "x")
	f.disk.listHook = func(context.Context) error { return errors.New("must not be called") }
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := f.cat.ListChildren(ctx, "parent")
	wantCode(t, err, subagent.CodeCancelled)
	if err.Error() != "subagent listing was cancelled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %q does not carry the cancellation", err)
	}
	_, err = f.cat.ListDescendants(ctx, "parent")
	wantCode(t, err, subagent.CodeCancelled)
	if n := f.disk.listCalls.Load(); n != 0 {
		t.Fatalf("List called %d times", n)
	}
}

// #43–46 and a cancellation observed only by the final checkpoint.
func TestListingCancellationAtEveryCheckpointIsCancelled(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *catFix, cancel context.CancelFunc)
	}{
		{"abort during list", func(f *catFix, cancel context.CancelFunc) {
			f.disk.listHook = func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() }
		}},
		{"abort during cold inspection", func(f *catFix, cancel context.CancelFunc) {
			f.disk.inspectHook = func(ctx context.Context, _ string) error { cancel(); <-ctx.Done(); return ctx.Err() }
		}},
		{"abort after inspection resolves", func(f *catFix, cancel context.CancelFunc) {
			// Both reads are past their pre-read checks before the abort,
			// so only the post-read checks can see it, on every run.
			f.cat.Concurrency = 2
			both := barrier(2)
			f.disk.afterInspect = func(context.Context, string, *session.Header) error { both(); cancel(); return nil }
		}},
		{"failure during abort", func(f *catFix, cancel context.CancelFunc) {
			f.disk.inspectHook = func(context.Context, string) error { cancel(); return errors.New("backend read failed") }
		}},
		{"abort after a cache hit", func(f *catFix, cancel context.CancelFunc) {
			f.cat.Cache = cacheFunc(func(session.Header, int64) (map[string]json.RawMessage, error) {
				cancel()
				return map[string]json.RawMessage{"subagent": json.RawMessage(`{"mode":"continuable","label":"c","seq":2}`)}, nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, descendants := range []bool{false, true} {
				f := newCatFix(t)
				f.author(childHeader("c1", "parent", 1), childEvents(descPayload("c", 2)))
				f.author(childHeader("c2", "parent", 2), childEvents(descPayload("c", 2)))
				ctx, cancel := context.WithCancel(t.Context())
				tt.setup(f, cancel)
				var err error
				if descendants {
					_, err = f.cat.ListDescendants(ctx, "parent")
				} else {
					_, err = f.cat.ListChildren(ctx, "parent")
				}
				wantCode(t, err, subagent.CodeCancelled)
				cancel()
			}
		})
	}
}

// barrier returns a function that blocks its first n callers until all n
// have called it; later callers pass through.
func barrier(n int) func() {
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	return func() {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		<-all
	}
}

// #47, #50
func TestListingParentWithoutChildrenIsEmpty(t *testing.T) {
	f := newCatFix(t)
	f.author(session.Header{ID: "parent", CreatedAt: 1}, []session.Event{ev(session.TypeTurnStart, 0, `{"turn":1}`)})
	rows, err := f.cat.ListChildren(t.Context(), "parent")
	if err != nil || rows == nil || len(rows) != 0 {
		t.Fatalf("rows %v, %v; want an empty, non-nil list", rows, err)
	}
	drows, err := f.cat.ListDescendants(t.Context(), "parent")
	if err != nil || drows == nil || len(drows) != 0 {
		t.Fatalf("descendants %v, %v", drows, err)
	}
	wantJSON(t, drows, `[]`)
}

// Cold reads run on at most Concurrency workers and the rows keep
// candidate order whatever order the reads finish in.
func TestListChildrenBoundsColdReadsAndKeepsCandidateOrder(t *testing.T) {
	f := newCatFix(t)
	const n = 24
	for i := range n {
		f.author(childHeader(fmt.Sprintf("c%02d", i), "parent", int64(i)), childEvents(descPayload(fmt.Sprintf("label %02d", i), 2)))
	}
	var inflight, peak atomic.Int64
	full := make(chan struct{})
	var once sync.Once
	f.disk.inspectHook = func(ctx context.Context, id string) error {
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		if cur >= subagent.DefaultConcurrency {
			once.Do(func() { close(full) })
		}
		select {
		case <-full: // the first reads wait until the pool is full
		case <-ctx.Done():
		}
		return nil
	}
	rows := listChildren(t, f.cat, "parent")
	if len(rows) != n {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if want := fmt.Sprintf("label %02d", i); r.Label != want {
			t.Fatalf("row %d label %q; want %q", i, r.Label, want)
		}
	}
	if p := peak.Load(); p != subagent.DefaultConcurrency {
		t.Fatalf("peak concurrent reads %d; want %d", p, subagent.DefaultConcurrency)
	}
}

// #49
func TestListDescendantsWalksInStablePreOrder(t *testing.T) {
	f := newCatFix(t)
	f.author(childHeader("A", "root", 1), childEvents(descPayload("a", 2)))
	f.author(childHeader("G", "A", 2), childEvents(descPayload("g", 2)))
	f.author(childHeader("B", "root", 3), childEvents(descPayload("b", 2)))
	rows, err := f.cat.ListDescendants(t.Context(), "root")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[
		{"kind":"child","id":"A","mode":"continuable","label":"a","activity":"inactive","hasChildren":true,"parentId":"root","depth":1},
		{"kind":"child","id":"G","mode":"continuable","label":"g","activity":"inactive","hasChildren":false,"parentId":"A","depth":2},
		{"kind":"child","id":"B","mode":"continuable","label":"b","activity":"inactive","hasChildren":false,"parentId":"root","depth":1}]`)
}

// #51
func TestListDescendantsWalksBelowOmittedCreationWindowRow(t *testing.T) {
	f := newCatFix(t)
	f.liveChild(childHeader("live-creation-window", "parent", 1), "")
	f.author(childHeader("below", "live-creation-window", 2), childEvents(descPayload("below the creation window", 2)))
	rows, err := f.cat.ListDescendants(t.Context(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[{"kind":"child","id":"below","mode":"continuable","label":"below the creation window","activity":"inactive","hasChildren":false,"parentId":"live-creation-window","depth":2}]`)
}

// #52, as changed by issue 11: a session in a parent cycle is listed as a
// corrupt diagnostic (the reference listed it as a child) and not walked.
func TestListDescendantsStopsAtCycles(t *testing.T) {
	f := newCatFix(t)
	// cycle-root has no origin, so cycle-node has no subagent children.
	f.author(session.Header{ID: "cycle-root", CreatedAt: 1, ParentSession: "cycle-node"}, childEvents(descPayload("root", 2)))
	f.author(childHeader("cycle-node", "cycle-root", 2), childEvents(descPayload("node", 2)))
	rows, err := f.cat.ListDescendants(t.Context(), "cycle-root")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[{"kind":"diagnostic","id":"cycle-node","reason":"corrupt","parentId":"cycle-root","depth":1}]`)
}

// Issue 11: a child whose header names itself as its parent is never
// listed as its own child, and a 2-cycle lists each side as corrupt.
func TestCatalogSelfParentAndTwoCycle(t *testing.T) {
	f := newCatFix(t)
	f.author(childHeader("self", "self", 1), childEvents(descPayload("self", 2)))
	f.author(childHeader("cyc-a", "cyc-b", 2), childEvents(descPayload("a", 2)))
	f.author(childHeader("cyc-b", "cyc-a", 3), childEvents(descPayload("b", 2)))
	for _, id := range []string{"self"} {
		rows, err := f.cat.ListChildren(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON(t, rows, `[]`)
		desc, err := f.cat.ListDescendants(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON(t, desc, `[]`)
	}
	rows, err := f.cat.ListChildren(t.Context(), "cyc-a")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[{"kind":"diagnostic","id":"cyc-b","reason":"corrupt"}]`)
	desc, err := f.cat.ListDescendants(t.Context(), "cyc-a")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, desc, `[{"kind":"diagnostic","id":"cyc-b","reason":"corrupt","parentId":"cyc-a","depth":1}]`)
}

// #53: no recursion, so a 10,000-deep chain is fine.
func TestListDescendantsHandlesTenThousandDeepChain(t *testing.T) {
	f := newCatFix(t)
	f.cat.Persisted = nil
	parent := "parent"
	for i := range 9999 {
		id := fmt.Sprintf("ordinary-%05d", i)
		if _, err := f.store.Create(session.Header{ID: id, CreatedAt: 1, ParentSession: parent}, session.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		parent = id
	}
	f.liveChild(childHeader("deep-subagent-leaf", parent, 1), descPayload("deep leaf", 2))
	rows, err := f.cat.ListDescendants(t.Context(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[{"kind":"child","id":"deep-subagent-leaf","mode":"continuable","label":"deep leaf","activity":"running","hasChildren":false,"parentId":"ordinary-09998","depth":10000}]`)
}

// #54
func TestListDescendantsTraversesOrdinaryAndOneShotIntermediates(t *testing.T) {
	f := newCatFix(t)
	f.author(session.Header{ID: "plain-fork", CreatedAt: 1, ParentSession: "parent", SeedLength: 1}, []session.Event{ev(session.TypeTurnStart, 0, `{"turn":1}`)})
	f.author(childHeader("under-fork", "plain-fork", 2), childEvents(descPayload("under the fork", 2)))
	f.author(childHeader("one-shot", "parent", 3), childEvents(oneShotPayload("one-shot intermediate")))
	f.author(childHeader("under-one-shot", "one-shot", 1<<50), childEvents(descPayload("under the one-shot", 2)))
	rows, err := f.cat.ListDescendants(t.Context(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, rows, `[
		{"kind":"child","id":"under-fork","mode":"continuable","label":"under the fork","activity":"inactive","hasChildren":false,"parentId":"plain-fork","depth":2},
		{"kind":"child","id":"one-shot","mode":"one-shot","label":"one-shot intermediate","activity":"inactive","hasChildren":true,"parentId":"parent","depth":1},
		{"kind":"child","id":"under-one-shot","mode":"continuable","label":"under the one-shot","activity":"inactive","hasChildren":false,"parentId":"one-shot","depth":2}]`)
}

// #55, #56
func TestListDescendantsKeepsDiagnosticPositionAndWalksBelowIt(t *testing.T) {
	for name, events := range map[string][]session.Event{
		"no descriptor":   {ev(session.TypeTurnStart, 0, `{"turn":1}`), ev(session.TypeTurnEnd, 1, `{"turn":1,"reason":{"kind":"completed"}}`)},
		"version 999":     childEvents(descPayload("future", 999)),
		"hostile (panic)": childEvents(descPayload("poison me", 2)),
	} {
		t.Run(name, func(t *testing.T) {
			f := newCatFix(t)
			if _, err := f.reg.Register(hostileUnit(true)); err != nil {
				t.Fatal(err)
			}
			f.author(childHeader("bare", "parent", 1), events)
			f.author(childHeader("below", "bare", 2), childEvents(descPayload("below", 2)))
			rows, err := f.cat.ListDescendants(t.Context(), "parent")
			if err != nil {
				t.Fatal(err)
			}
			wantJSON(t, rows, `[
				{"kind":"diagnostic","id":"bare","reason":"corrupt","parentId":"parent","depth":1},
				{"kind":"child","id":"below","mode":"continuable","label":"below","activity":"inactive","hasChildren":false,"parentId":"bare","depth":2}]`)
		})
	}
}

// The projection registry and cache are the only classifiers: a unit
// registered later changes nothing for listing but is folded for live
// sessions from memory.
func TestListChildrenLiveChildCostsNoLogRead(t *testing.T) {
	f := newCatFix(t)
	for i := range 50 {
		s := f.liveChild(childHeader(fmt.Sprintf("live-%02d", i), "parent", int64(i)), descPayload("live", 2))
		f.disk.put(s.Header(), s.MustEvents()) // persisted too: live wins
	}
	if _, err := f.reg.Register(projection.Fold[int]{Name: "late", Version: 1}); err != nil {
		t.Fatal(err)
	}
	if rows := listChildren(t, f.cat, "parent"); len(rows) != 50 {
		t.Fatalf("%d rows", len(rows))
	}
	if n := f.disk.inspectCalls.Load(); n != 0 {
		t.Fatalf("live children caused %d log reads", n)
	}
}
