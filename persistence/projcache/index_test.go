package projcache_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
)

// indexFix is a data directory with hand-written session logs, the cache
// and its index, and a header reader that counts the log opens.
type indexFix struct {
	t       *testing.T
	c       *projcache.Cache
	st      *session.Store
	dir     string
	sdir    string
	x       *projcache.Index
	opens   atomic.Int64
	headers map[string]session.Header
}

func newIndexFix(t *testing.T) *indexFix {
	c, _, st, dir := setup(t)
	f := &indexFix{t: t, c: c, st: st, dir: dir, sdir: filepath.Join(dir, "sessions"), headers: map[string]session.Header{}}
	if err := os.MkdirAll(f.sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	f.x = c.Index(f.sdir, f.readHeader)
	f.x.RacyWindow = 0
	return f
}

func (f *indexFix) readHeader(_ context.Context, id string) (session.Header, error) {
	f.opens.Add(1)
	file, err := os.Open(filepath.Join(f.sdir, id+".jsonl"))
	if err != nil {
		return session.Header{}, err
	}
	defer file.Close()
	line, err := bufio.NewReader(file).ReadBytes('\n')
	if err != nil {
		return session.Header{}, err
	}
	return session.ParseHeaderLine(line[:len(line)-1], id)
}

// write writes a log of id with the given parent and n filler lines,
// dated an hour ago (well outside any racy window).
func (f *indexFix) write(id, parent string, n int) {
	f.t.Helper()
	h := session.Header{ID: id, CreatedAt: 7, ParentSession: parent, DelegationDepth: 1}
	if parent != "" {
		h.Origin = session.OriginSubagent
	}
	f.headers[id] = h
	line, err := session.MarshalHeaderLine(h)
	if err != nil {
		f.t.Fatal(err)
	}
	data := append(line, '\n')
	for i := range n {
		data = fmt.Appendf(data, `{"type":"turn/start","seq":%d,"time":1,"data":{"turn":%d}}`+"\n", i, i+1)
	}
	p := filepath.Join(f.sdir, id+".jsonl")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		f.t.Fatal(err)
	}
}

func (f *indexFix) size(id string) int64 {
	st, err := os.Stat(filepath.Join(f.sdir, id+".jsonl"))
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Size()
}

// checkpoint records a cache row for id as of its current log, the way a
// commit point does (a live session of the same header, titled after id).
func (f *indexFix) checkpoint(id string) {
	f.t.Helper()
	s, err := f.st.Create(f.headers[id], session.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer f.st.Remove(id)
	if _, err := s.AppendRaw(session.TypeSessionTitle, json.RawMessage(`{"title":"title of `+id+`","source":{"kind":"model"}}`)); err != nil {
		f.t.Fatal(err)
	}
	if wrote, err := f.c.Checkpoint(f.t.Context(), s, int64(s.Len()), f.size(id)); !wrote || err != nil {
		f.t.Fatalf("checkpoint %s: wrote=%v err=%v", id, wrote, err)
	}
}

// scan runs Scan and reports the header reads it cost.
func (f *indexFix) scan(skip func(string) bool) ([]projcache.Indexed, int64) {
	f.t.Helper()
	before := f.opens.Load()
	rows, err := f.x.Scan(f.t.Context(), skip)
	if err != nil {
		f.t.Fatal(err)
	}
	return rows, f.opens.Load() - before
}

func ids(rows []projcache.Indexed) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Header.ID)
	}
	return out
}

func TestIndexScanServesValidRowsWithoutOpeningLogs(t *testing.T) {
	f := newIndexFix(t)
	for i := range 50 {
		f.write(fmt.Sprintf("s%03d", i), "p", 3)
	}
	first, opens := f.scan(nil)
	if len(first) != 50 || opens != 50 {
		t.Fatalf("cold scan: %d rows, %d opens; want 50, 50", len(first), opens)
	}
	again, opens := f.scan(nil)
	if opens != 0 {
		t.Fatalf("scan over a valid index opened %d logs; want 0", opens)
	}
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("indexed scan differs:\n%+v\n%+v", again, first)
	}
	if first[0].Header.ParentSession != "p" || first[0].Size != f.size("s000") || first[0].Values != nil {
		t.Fatalf("row %+v", first[0])
	}
}

func TestIndexRowFailingItsWitnessFallsBack(t *testing.T) {
	f := newIndexFix(t)
	f.write("a", "p", 2)
	f.write("b", "p", 2)
	f.checkpoint("a")
	f.checkpoint("b")
	rows, opens := f.scan(nil)
	if opens != 0 || string(rows[0].Values["title"]) != `"title of a"` {
		t.Fatalf("checkpointed rows: %d opens, values %v", opens, rows[0].Values)
	}
	// a grows: its row fails (one header read) and its values, now stale,
	// are not served; b is untouched.
	f.write("a", "p", 3)
	rows, opens = f.scan(nil)
	if opens != 1 || rows[0].Values != nil || rows[0].Size != f.size("a") || rows[1].Values == nil {
		t.Fatalf("after append: %d opens, rows %+v", opens, rows)
	}
	// a is replaced under the same name by another lifecycle.
	f.write("a", "q", 5)
	rows, opens = f.scan(nil)
	if opens != 1 || rows[0].Header.ParentSession != "q" {
		t.Fatalf("after replacement: %d opens, rows %+v", opens, rows)
	}
	// b is deleted: it disappears from the scan and from the index.
	os.Remove(filepath.Join(f.sdir, "b.jsonl"))
	rows, opens = f.scan(nil)
	if opens != 0 || !reflect.DeepEqual(ids(rows), []string{"a"}) {
		t.Fatalf("after deletion: %d opens, ids %v", opens, ids(rows))
	}
	f.write("b", "p", 2)
	if _, opens = f.scan(nil); opens != 1 {
		t.Fatalf("a re-created b was served from a deleted row (%d opens)", opens)
	}
}

func TestIndexDamageYieldsIdenticalScans(t *testing.T) {
	f := newIndexFix(t)
	for i := range 20 {
		id := fmt.Sprintf("s%02d", i)
		f.write(id, "p", i%4)
		if i%2 == 0 {
			f.checkpoint(id)
		}
	}
	want, _ := f.scan(nil)
	good, err := os.ReadFile(f.x.Path())
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x40
	for _, damage := range []struct {
		name string
		do   func()
	}{
		{"deleted", func() { os.Remove(f.x.Path()) }},
		{"garbage", func() { os.WriteFile(f.x.Path(), []byte("not an index\x00\xff"), 0o600) }},
		{"truncated", func() { os.WriteFile(f.x.Path(), good[:len(good)/3], 0o600) }},
		{"bit flip", func() { os.WriteFile(f.x.Path(), flipped, 0o600) }},
		{"empty", func() { os.WriteFile(f.x.Path(), nil, 0o600) }},
	} {
		damage.do()
		got, opens := f.scan(nil)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s index: scan differs:\n got %+v\nwant %+v", damage.name, got, want)
		}
		if opens == 0 && damage.name != "bit flip" {
			t.Fatalf("%s index: no rebuild", damage.name)
		}
		// The rebuilt index is valid again.
		if got, opens := f.scan(nil); opens != 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s index: not rebuilt (%d opens)", damage.name, opens)
		}
	}
}

func TestIndexSkipsLiveSessionsAndRacyLogs(t *testing.T) {
	f := newIndexFix(t)
	f.write("live", "p", 1)
	f.write("cold", "p", 1)
	rows, opens := f.scan(func(id string) bool { return id == "live" })
	if opens != 1 || !reflect.DeepEqual(ids(rows), []string{"cold"}) {
		t.Fatalf("skip: %d opens, ids %v", opens, ids(rows))
	}
	// A log modified within the racy window is served but not recorded:
	// a same-size rewrite in the same timestamp tick could hide behind it.
	f.x.RacyWindow = time.Hour
	p := filepath.Join(f.sdir, "fresh.jsonl")
	f.write("fresh", "p", 1)
	now := time.Now()
	os.Chtimes(p, now, now)
	skipLive := func(id string) bool { return id == "live" }
	for range 2 {
		if _, opens := f.scan(skipLive); opens != 1 {
			t.Fatalf("racy log: %d opens; want 1 on every scan", opens)
		}
	}
	// A commit point may record it: the holder just flushed it itself.
	f.checkpoint("fresh")
	if _, opens := f.scan(skipLive); opens != 0 {
		t.Fatalf("after checkpoint: %d opens; want 0", opens)
	}
}

func TestIndexServesOnlyCurrentUnitVersions(t *testing.T) {
	f := newIndexFix(t)
	f.write("a", "p", 1)
	f.checkpoint("a")
	rows, _ := f.scan(nil)
	var title string
	if err := json.Unmarshal(rows[0].Values["title"], &title); err != nil || title != "title of a" {
		t.Fatalf("values %v", rows[0].Values)
	}
	// A row written by another build with other unit versions: the
	// checkpoint's row file is rewritten, and the index rebuilt from it.
	row := projcache.Row{ID: "a", CreatedAt: 7, Size: f.size("a"), Units: map[string]projcache.UnitValue{
		"title": {StateVersion: 99, Value: json.RawMessage(`"old"`)},
	}}
	if err := f.c.Put(row); err != nil {
		t.Fatal(err)
	}
	os.Remove(f.x.Path())
	if rows, _ := f.scan(nil); rows[0].Values != nil {
		t.Fatalf("foreign unit version served: %v", rows[0].Values)
	}
}

// FuzzIndexFile feeds arbitrary bytes as the index file: Scan must not
// panic and must return exactly the scan of a directory without an index.
//
// Run: go test ./persistence/projcache -run '^$' -fuzz FuzzIndexFile -fuzztime 60s
func FuzzIndexFile(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x05\x01\x01a\x00"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		fx := newIndexFix(t)
		fx.write("a", "p", 1)
		fx.write("b", "", 2)
		fx.checkpoint("a")
		want, _ := fx.scan(nil)
		if err := os.WriteFile(fx.x.Path(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, _ := fx.scan(nil)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scan differs with index %q", data)
		}
	})
}

// Removing a cache row removes the index's values for it too.
func TestCacheRemoveForgetsIndexedValues(t *testing.T) {
	f := newIndexFix(t)
	f.write("a", "p", 1)
	f.write("b", "p", 1)
	f.checkpoint("a")
	f.checkpoint("b")
	if rows, _ := f.scan(nil); rows[0].Values == nil || rows[1].Values == nil {
		t.Fatalf("values not indexed: %+v", rows)
	}
	if err := f.c.Remove("a"); err != nil {
		t.Fatal(err)
	}
	rows, opens := f.scan(nil)
	if rows[0].Values != nil || rows[1].Values == nil || opens != 1 {
		t.Fatalf("after Remove: %d opens, rows %+v", opens, rows)
	}
}
