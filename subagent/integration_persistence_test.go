package subagent_test

// Integration tests of the catalog over the real JSONL persistence store
// and the real projection cache in t.TempDir(). (Test-only imports of
// persistence: the subagent package itself never imports it.)

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// diskReader adapts *persistence.Store to subagent.SessionReader, counting
// calls (the lead's composition root has the same five-line adapter).
type diskReader struct {
	st       *persistence.Store
	lists    atomic.Int64
	inspects atomic.Int64
}

func (r *diskReader) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	r.lists.Add(1)
	entries, err := r.st.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]subagent.PersistedEntry, len(entries))
	for i, e := range entries {
		out[i] = subagent.PersistedEntry{Header: e.Header, Size: e.Size}
	}
	return out, nil
}

func (r *diskReader) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	r.inspects.Add(1)
	snap, err := r.st.Inspect(ctx, id)
	return snap.Header, snap.Events, err
}

type realStack struct {
	dir   string
	p     *persistence.Store
	store *session.Store
	reg   *projection.Registry
	cache *projcache.Cache
	disk  *diskReader
	cat   *subagent.Catalog
	// index is the catalog index (updated by every checkpoint); the
	// catalog uses it only when cat.Index is set to it.
	index *indexReader
}

// indexReader adapts the projection cache's index to the catalog (the
// lead's composition root has the same adapter), counting the header reads
// its fallback costs: each one opens a log.
type indexReader struct {
	x           *projcache.Index
	headerReads atomic.Int64
}

func (r *indexReader) Scan(ctx context.Context, skip func(id string) bool) ([]subagent.PersistedEntry, error) {
	rows, err := r.x.Scan(ctx, skip)
	if err != nil {
		return nil, err
	}
	out := make([]subagent.PersistedEntry, len(rows))
	for i, e := range rows {
		out[i] = subagent.PersistedEntry{Header: e.Header, Size: e.Size, Values: e.Values}
	}
	return out, nil
}

func newRealStack(t testing.TB, dir string) *realStack {
	t.Helper()
	p, err := persistence.Open(dir, persistence.Options{NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	store := session.NewStore(&session.DeterministicSources{Epoch: 1_000_000})
	detachP := p.Attach(store)
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(projection.Title()); err != nil {
		t.Fatal(err)
	}
	detachR := reg.Attach(store)
	cache, err := projcache.Open(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range store.List() {
			store.Remove(s.ID())
		}
		detachR()
		detachP()
		p.Close()
	})
	disk := &diskReader{st: p}
	index := &indexReader{}
	index.x = cache.Index(p.Dir(), func(ctx context.Context, id string) (session.Header, error) {
		index.headerReads.Add(1)
		e, err := p.Entry(ctx, id)
		return e.Header, err
	})
	// Logs written by the test are fresh; rows rebuilt for them are kept.
	index.x.RacyWindow = 0
	return &realStack{dir: dir, p: p, store: store, reg: reg, cache: cache, disk: disk, index: index,
		cat: &subagent.Catalog{Sessions: store, Projections: reg, Persisted: disk, Cache: cache}}
}

func (r *realStack) fileSize(t testing.TB, id string) int64 {
	t.Helper()
	info, err := os.Stat(filepath.Join(r.p.Dir(), id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// settle flushes s, checkpoints its projections (as the lead does after a
// flush at child disposal) and removes it from the live store.
func (r *realStack) settle(t testing.TB, s *session.Session) {
	t.Helper()
	ctx := context.Background()
	if err := r.p.Flush(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cache.Checkpoint(ctx, s, int64(s.Len()), r.fileSize(t, s.ID())); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
}

func appendTurn(t testing.TB, s *session.Session, text string) {
	t.Helper()
	turn := session.LastTurn(s.MustEvents()) + 1
	for _, step := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, session.TurnData{Turn: turn}},
		{session.TypeUserMessage, session.Message{ID: s.NewID(), Role: session.RoleUser, Content: []session.Block{session.Text(text)}, Source: session.Source{Kind: session.SourceUser}}},
		{session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: session.Message{ID: s.NewID(), Role: session.RoleAssistant, Content: []session.Block{session.Text("done: " + text)}, Source: session.Source{Kind: session.SourceModel}}}},
		{session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}},
	} {
		if _, err := s.Append(step.typ, step.data); err != nil {
			t.Fatal(err)
		}
	}
}

func descriptorSeed(t testing.TB, d subagent.Descriptor, seq int64) session.Event {
	raw, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: session.TypeDescriptor, Seq: seq, Time: 1, Data: raw}
}

// buildCorpus creates, under the live session "parent", children of every
// listing shape and settles all but one.
func (r *realStack) buildCorpus(t *testing.T) {
	parent, err := r.store.Create(session.Header{ID: "parent", CreatedAt: 10, ParentSession: "root", Origin: session.OriginSubagent, DelegationDepth: 1},
		session.CreateOptions{Seed: []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "parent itself"}, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, parent, "parent work")

	child := func(id string, at int64, seed []session.Event) *session.Session {
		s, err := r.store.Create(session.Header{ID: id, CreatedAt: at, ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 2},
			session.CreateOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cont := child("c1-continuable", 11, []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "alpha"}, 0)})
	appendTurn(t, cont, "alpha")
	r.settle(t, cont)

	one := child("c2-one-shot", 12, nil)
	if _, err := one.Append(session.TypeTurnStart, session.TurnData{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	raw, _ := subagent.Descriptor{Mode: subagent.ModeOneShot, Provider: "spawn"}.Snapshot()
	if _, err := one.AppendRaw(session.TypeDescriptor, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Append(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}); err != nil {
		t.Fatal(err)
	}
	r.settle(t, one)

	bare := child("c3-descriptorless", 13, nil)
	appendTurn(t, bare, "rejected before entering")
	r.settle(t, bare)

	fork, err := r.store.Fork("parent", session.ForkOptions{Boundary: -1, ChildID: "c4-fork",
		Header: session.Header{CreatedAt: 14, Origin: session.OriginSubagent, DelegationDepth: 2},
		Prepare: func(seed []session.Event) []session.Event {
			return append(seed, descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "fork", Label: "own fork label"}, int64(len(seed))))
		}})
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, fork, "fork work")
	r.settle(t, fork)

	stillborn, err := r.store.Fork("parent", session.ForkOptions{Boundary: -1, ChildID: "c5-stillborn",
		Header: session.Header{CreatedAt: 15, Origin: session.OriginSubagent, DelegationDepth: 2}})
	if err != nil {
		t.Fatal(err)
	}
	r.settle(t, stillborn)

	live := child("c6-live", 16, []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "still running"}, 0)})
	if _, err := live.Append(session.TypeTurnStart, session.TurnData{Turn: 1}); err != nil {
		t.Fatal(err)
	}

	damaged := child("c7-damaged", 17, []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "damaged"}, 0)})
	appendTurn(t, damaged, "soon damaged")
	r.settle(t, damaged)
	// Corrupt the middle of the log: List still reads its header, Inspect
	// refuses it.
	path := filepath.Join(r.p.Dir(), "c7-damaged.jsonl")
	data, _ := os.ReadFile(path)
	lines := splitLines(data)
	lines = append(lines[:3], append([][]byte{[]byte("{not json")}, lines[3:]...)...)
	if err := os.WriteFile(path, joinLines(lines), 0o600); err != nil {
		t.Fatal(err)
	}
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func joinLines(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(append(out, l...), '\n')
	}
	return out
}

const corpusRows = `[
	{"kind":"child","id":"c1-continuable","mode":"continuable","label":"alpha","activity":"inactive","hasChildren":false},
	{"kind":"child","id":"c2-one-shot","mode":"one-shot","activity":"inactive","hasChildren":false},
	{"kind":"diagnostic","id":"c3-descriptorless","reason":"corrupt"},
	{"kind":"child","id":"c4-fork","mode":"continuable","label":"own fork label","activity":"inactive","hasChildren":false},
	{"kind":"child","id":"c5-stillborn","mode":"continuable","label":"parent itself","activity":"inactive","hasChildren":false},
	{"kind":"child","id":"c6-live","mode":"continuable","label":"still running","activity":"running","hasChildren":false},
	{"kind":"diagnostic","id":"c7-damaged","reason":"unavailable"}]`

// Rebuild: a fresh cache, a valid, damaged or deleted index, garbage rows,
// a deleted cache and no cache at all list the same corpus identically;
// only the number of reads differs. Every step lists twice: the second
// listing shows what the first one rebuilt.
func TestCatalogOverRealPersistenceRebuildsIdenticallyFromAnyCacheState(t *testing.T) {
	r := newRealStack(t, t.TempDir())
	r.buildCorpus(t)
	projDir := filepath.Join(r.dir, "projections")
	indexFile := r.index.x.Path()
	garbageRows := func() {
		entries, _ := os.ReadDir(projDir)
		for _, e := range entries {
			if e.Name() != projcache.IndexFile {
				os.WriteFile(filepath.Join(projDir, e.Name()), []byte(`{"id":`), 0o600)
			}
		}
	}
	// Six persisted-only children; parent and c6 are live. Cache hits for
	// c1, c2, c4; c3 (null identity), c5 (ancestor identity, seq-gated)
	// and c7 (size changed) are read.
	const coldChildren = 6
	steps := []struct {
		name    string
		index   bool
		prepare func()
		// inspections and header reads of the first and second listing
		// (-1: some, but not all)
		wantInspects, wantHeaders [2]int64
	}{
		{"fresh cache", false, func() {}, [2]int64{3, 3}, [2]int64{}},
		// Checkpoints recorded c1..c5; c7's row failed its witness when
		// its log was damaged, and is rebuilt once.
		{"valid index", true, func() {}, [2]int64{3, 3}, [2]int64{1, 0}},
		{"garbage index", true, func() { os.WriteFile(indexFile, []byte("\x01garbage\xff"), 0o600) }, [2]int64{3, 3}, [2]int64{coldChildren, 0}},
		{"truncated index", true, func() {
			data, _ := os.ReadFile(indexFile)
			os.WriteFile(indexFile, data[:len(data)/2], 0o600)
		}, [2]int64{3, 3}, [2]int64{-1, 0}},
		{"deleted index", true, func() { os.Remove(indexFile) }, [2]int64{3, 3}, [2]int64{coldChildren, 0}},
		// The index holds the projection values itself.
		{"valid index, garbage rows", true, garbageRows, [2]int64{3, 3}, [2]int64{}},
		{"deleted index, garbage rows", true, func() { os.Remove(indexFile) }, [2]int64{6, 6}, [2]int64{coldChildren, 0}},
		{"garbage rows", false, func() {}, [2]int64{6, 6}, [2]int64{}},
		{"deleted cache and index", true, func() { os.RemoveAll(projDir) }, [2]int64{6, 6}, [2]int64{coldChildren, coldChildren}},
		{"deleted cache", false, func() {}, [2]int64{6, 6}, [2]int64{}},
		{"no cache service", false, func() { r.cat.Cache = nil }, [2]int64{6, 6}, [2]int64{}},
	}
	var wantLists int64
	for _, step := range steps {
		step.prepare()
		r.cat.Index = nil
		if step.index {
			r.cat.Index = r.index
		} else {
			wantLists += 2
		}
		for pass := range 2 {
			inspects, headers := r.disk.inspects.Load(), r.index.headerReads.Load()
			wantJSON(t, listChildren(t, r.cat, "parent"), corpusRows)
			if got := r.disk.inspects.Load() - inspects; got != step.wantInspects[pass] {
				t.Errorf("%s, listing %d: %d inspections; want %d", step.name, pass+1, got, step.wantInspects[pass])
			}
			got := r.index.headerReads.Load() - headers
			if want := step.wantHeaders[pass]; got != want && (want != -1 || got <= 0 || got >= coldChildren) {
				t.Errorf("%s, listing %d: %d header reads; want %d", step.name, pass+1, got, step.wantHeaders[pass])
			}
		}
	}
	if r.disk.lists.Load() != wantLists {
		t.Errorf("List called %d times; want %d (never with an index)", r.disk.lists.Load(), wantLists)
	}
	for _, index := range []subagent.CatalogIndex{nil, r.index} {
		r.cat.Index = index
		rows, err := r.cat.ListDescendants(t.Context(), "root")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 8 || rows[0].ID != "parent" || !rows[0].HasChildren || rows[1].Depth != 2 {
			t.Fatalf("descendants (index %v) %+v", index != nil, rows)
		}
	}
}

// With a valid index, N settled children list with no log opened at all:
// no persisted listing (which opens every log for its header), no header
// read and no inspection. A child that is live costs nothing either, and a
// settled one that grew since its checkpoint costs exactly one header read
// and one inspection.
func TestCatalogWithValidIndexOpensNoLog(t *testing.T) {
	r := newRealStack(t, t.TempDir())
	r.cat.Index = r.index
	const n = 40
	for i := range n {
		s, err := r.store.Create(session.Header{ID: fmt.Sprintf("c%03d", i), CreatedAt: int64(i + 1), ParentSession: "p", Origin: session.OriginSubagent, DelegationDepth: 1},
			session.CreateOptions{Seed: []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "child"}, 0)}})
		if err != nil {
			t.Fatal(err)
		}
		appendTurn(t, s, "work")
		if i == 0 {
			if err := r.p.Flush(t.Context(), s.ID()); err != nil {
				t.Fatal(err)
			}
			continue // stays live
		}
		r.settle(t, s)
	}
	rows := listChildren(t, r.cat, "p")
	if len(rows) != n || rows[0].Activity != subagent.ActivityRunning || rows[1].Activity != subagent.ActivityInactive {
		t.Fatalf("rows %+v", rows)
	}
	if l, h, i := r.disk.lists.Load(), r.index.headerReads.Load(), r.disk.inspects.Load(); l+h+i != 0 {
		t.Fatalf("valid index: %d lists, %d header reads, %d inspections; want none", l, h, i)
	}
	// c001 grows behind the index's back (another process resumed it).
	f, err := os.OpenFile(filepath.Join(r.p.Dir(), "c001.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"turn/start","seq":5,"time":1,"data":{"turn":2}}` + "\n")
	f.Close()
	if again := listChildren(t, r.cat, "p"); len(again) != n {
		t.Fatalf("rows %+v", again)
	}
	if h, i := r.index.headerReads.Load(), r.disk.inspects.Load(); h != 1 || i != 1 {
		t.Fatalf("grown child: %d header reads, %d inspections; want 1, 1", h, i)
	}
}

// Counting: a cold child costs exactly one Inspect on a cache miss and none
// on a hit; a live child none at all.
func TestCatalogOverRealPersistenceCountsReads(t *testing.T) {
	r := newRealStack(t, t.TempDir())
	s, err := r.store.Create(session.Header{ID: "cold", CreatedAt: 1, ParentSession: "p", Origin: session.OriginSubagent, DelegationDepth: 1},
		session.CreateOptions{Seed: []session.Event{descriptorSeed(t, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "cold one"}, 0)}})
	if err != nil {
		t.Fatal(err)
	}
	appendTurn(t, s, "work")
	if err := r.p.Flush(t.Context(), "cold"); err != nil {
		t.Fatal(err)
	}
	// Live (and persisted): zero reads.
	listChildren(t, r.cat, "p")
	if n := r.disk.inspects.Load(); n != 0 {
		t.Fatalf("live child read %d times", n)
	}
	if err := r.store.Remove("cold"); err != nil {
		t.Fatal(err)
	}
	want := `[{"kind":"child","id":"cold","mode":"continuable","label":"cold one","activity":"inactive","hasChildren":false}]`
	wantJSON(t, listChildren(t, r.cat, "p"), want)
	if n := r.disk.inspects.Load(); n != 1 {
		t.Fatalf("cache miss: %d reads; want 1", n)
	}
	// Warm the cache the way the lead's shutdown/disposal checkpoint does.
	snap, err := r.p.Inspect(t.Context(), "cold")
	if err != nil {
		t.Fatal(err)
	}
	values, err := r.reg.Restore(snap.Events)
	if err != nil {
		t.Fatal(err)
	}
	row := projcache.Row{ID: "cold", CreatedAt: 1, Size: snap.Size, AsOfSeq: values.AsOfSeq, Units: map[string]projcache.UnitValue{}}
	for k, v := range values.Values {
		row.Units[k] = projcache.UnitValue{StateVersion: r.reg.Versions()[k], Value: v}
	}
	if err := r.cache.Put(row); err != nil {
		t.Fatal(err)
	}
	before := r.disk.inspects.Load()
	wantJSON(t, listChildren(t, r.cat, "p"), want)
	if n := r.disk.inspects.Load() - before; n != 0 {
		t.Fatalf("cache hit: %d reads; want 0", n)
	}
	var cached map[string]json.RawMessage
	if cached, err = r.cache.Get(snap.Header, snap.Size); err != nil || cached == nil {
		t.Fatalf("row not served: %v", err)
	}
}
