package subagent_test

// Benchmarks of the catalog over real JSONL files (persistence.Store) and
// the real projection cache. Run with:
//
//	go test ./subagent -run '^$' -bench 'ListChildren|ListDescendants' -benchmem
//
// The corpora are generated once per benchmark process: one template child
// log of the target size is written through persistence, then cloned under
// D child headers; warm-cache rows are written the way Checkpoint does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// writeTemplate writes one continuable child log of about size bytes and
// returns its bytes after the header line.
func writeTemplate(b *testing.B, r *realStack, size int) []byte {
	s, err := r.store.Create(session.Header{ID: "template", CreatedAt: 1, ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1},
		session.CreateOptions{Seed: []session.Event{descriptorSeed(b, subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "bench child"}, 0)}})
	if err != nil {
		b.Fatal(err)
	}
	appendTurn(b, s, "benchmark task")
	if err := r.p.Flush(context.Background(), s.ID()); err != nil {
		b.Fatal(err)
	}
	chunk := strings.Repeat("x", 900)
	for turn := 2; ; turn++ {
		cur := r.fileSizeNow(s.ID())
		if cur >= int64(size)-1100 {
			break
		}
		if _, err := s.Append(session.TypeTurnStart, session.TurnData{Turn: turn}); err != nil {
			b.Fatal(err)
		}
		for range min(50, (int64(size)-cur)/1000+1) {
			if _, err := s.Append(session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: chunk}}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.Append(session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}); err != nil {
			b.Fatal(err)
		}
		if err := r.p.Flush(context.Background(), s.ID()); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.store.Remove(s.ID()); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(r.p.Dir(), "template.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	os.Remove(filepath.Join(r.p.Dir(), "template.jsonl"))
	return data[bytes.IndexByte(data, '\n')+1:]
}

func (r *realStack) fileSizeNow(id string) int64 {
	info, err := os.Stat(filepath.Join(r.p.Dir(), id+".jsonl"))
	if err != nil {
		return 0
	}
	return info.Size()
}

// cloneChildren writes d children of "parent" sharing the template body,
// each with its warm cache row written the way Checkpoint does, and dates
// the logs an hour back (settled children; outside the index's racy
// window, so the first scan records every row).
func cloneChildren(b *testing.B, r *realStack, body []byte, d int) {
	snapValues, err := r.reg.Restore(decodeBody(b, body))
	if err != nil {
		b.Fatal(err)
	}
	versions := r.reg.Versions()
	old := time.Now().Add(-time.Hour)
	for i := range d {
		h := session.Header{ID: fmt.Sprintf("child-%05d", i), CreatedAt: int64(100 + i), ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
		line, _ := session.MarshalHeaderLine(h)
		file := append(append(line, '\n'), body...)
		path := filepath.Join(r.p.Dir(), h.ID+".jsonl")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			b.Fatal(err)
		}
		row := projcache.Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: int64(len(file)), AsOfSeq: snapValues.AsOfSeq, Units: map[string]projcache.UnitValue{}}
		for k, v := range snapValues.Values {
			row.Units[k] = projcache.UnitValue{StateVersion: versions[k], Value: v}
		}
		if err := r.cache.Put(row); err != nil {
			b.Fatal(err)
		}
	}
}

func decodeBody(b *testing.B, body []byte) []session.Event {
	var out []session.Event
	for _, line := range splitLines(body) {
		var e session.Event
		if err := json.Unmarshal(line, &e); err != nil {
			b.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// benchCorpus is one generated data directory: d children of "parent"
// with logs of one size, their cache rows, and the stack over it.
type benchCorpus struct {
	r    *realStack
	body []byte
}

// corpora are generated once per benchmark process (they are reused by
// every mode and every -count round) under one directory removed when
// the process ends... or left in the OS temp dir if it is killed.
var (
	corpora   = map[string]*benchCorpus{}
	templates = map[int][]byte{}
	corpusDir string
)

// corpus returns the corpus of d children with logs of about size bytes.
// The stack's t is the first benchmark that asked; it is never cleaned up
// by the testing package (the process exit takes the directory).
func corpus(b *testing.B, d, size int) *benchCorpus {
	key := fmt.Sprintf("%d/%d", d, size)
	if c, ok := corpora[key]; ok {
		return c
	}
	if corpusDir == "" {
		dir, err := os.MkdirTemp("", "acp-agent-catalog-bench-")
		if err != nil {
			b.Fatal(err)
		}
		corpusDir = dir
	}
	dir := filepath.Join(corpusDir, strings.ReplaceAll(key, "/", "x"))
	r := newRealStack(noCleanup{b}, dir)
	body, ok := templates[size]
	if !ok {
		body = writeTemplate(b, r, size)
		templates[size] = body
	}
	cloneChildren(b, r, body, d)
	c := &benchCorpus{r: r, body: body}
	corpora[key] = c
	return c
}

// noCleanup keeps a corpus's stack alive past the benchmark that built it.
type noCleanup struct{ *testing.B }

func (noCleanup) Cleanup(func()) {}

// BenchmarkListChildren is the catalog's comparison table: listing the
// d persisted children of one parent whose logs have a given size,
//
//	live      every child live in the session store (projection snapshots; no log read)
//	index     cold, served by a valid catalog index (one stat per child)
//	warmcache cold, persisted listing plus one projection cache row per child
//	nocache   cold, persisted listing plus one full log read per child
//
// reported with reads/child (log inspections) and opens/child (every log
// opened: inspections, header reads, the persisted listing's opens).
// 1,000 live children with 1 MiB logs are skipped (1 GiB of memory for a
// listing that reads no log anyway). Run with:
//
//	go test ./subagent -run '^$' -bench 'ListChildren' -benchtime 3x -count 3 -benchmem
func BenchmarkListChildren(b *testing.B) {
	sizes := []struct {
		name  string
		bytes int
	}{{"1KB", 1 << 10}, {"4KB", 4 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}}
	for _, mode := range []string{"live", "index", "warmcache", "nocache"} {
		for _, d := range []int{10, 100, 1000} {
			for _, sz := range sizes {
				b.Run(fmt.Sprintf("%s/D=%d/log=%s", mode, d, sz.name), func(b *testing.B) {
					if mode == "live" && d*sz.bytes > 512<<20 {
						b.Skip("1 GiB of live logs: skipped (a live listing reads no log)")
					}
					c := corpus(b, d, sz.bytes)
					if mode == "live" {
						benchLiveChildren(b, c, d)
						return
					}
					r := c.r
					cat := cloneCatalog(r.cat)
					switch mode {
					case "index":
						cat.Index = r.index
					case "nocache":
						cat.Cache = nil
					}
					benchCold(b, r, cat, d, len(c.body))
				})
			}
		}
	}
}

func benchCold(b *testing.B, r *realStack, cat *subagent.Catalog, d, logBytes int) {
	ctx := context.Background()
	// The first listing rebuilds whatever the index lacks.
	rows, err := cat.ListChildren(ctx, "parent")
	if err != nil || len(rows) != d || rows[0].Kind != subagent.KindChild {
		b.Fatalf("rows %d %v", len(rows), err)
	}
	inspects, lists, headers := r.disk.inspects.Load(), r.disk.lists.Load(), r.index.headerReads.Load()
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		if _, err := cat.ListChildren(ctx, "parent"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
	n := float64(b.N) * float64(d)
	inspects = r.disk.inspects.Load() - inspects
	opens := inspects + (r.disk.lists.Load()-lists)*int64(d) + r.index.headerReads.Load() - headers
	b.ReportMetric(float64(inspects)/n, "reads/child")
	b.ReportMetric(float64(opens)/n, "opens/child")
	b.ReportMetric(float64(logBytes), "logbytes")
}

// benchLiveChildren lists d live children, each holding the corpus's log,
// with the persisted corpus and the index in place (the children are
// persisted too, as in the app; the index scan skips live sessions).
func benchLiveChildren(b *testing.B, c *benchCorpus, d int) {
	store := session.NewStore(&session.DeterministicSources{Epoch: 1_000_000})
	detach := c.r.reg.Attach(store)
	defer detach()
	events := decodeBody(b, c.body)
	for i := range d {
		h := session.Header{ID: fmt.Sprintf("child-%05d", i), CreatedAt: int64(100 + i), ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
		if _, err := store.Create(h, session.CreateOptions{Seed: events}); err != nil {
			b.Fatal(err)
		}
	}
	cat := cloneCatalog(c.r.cat)
	cat.Sessions = store
	cat.Index = c.r.index
	benchCold(b, c.r, cat, d, len(c.body))
}

// BenchmarkListDescendants walks a 10,000-node tree (fan-out 10 under the
// root, every node a continuable subagent), live, and cold with a valid
// index, with a warm projection cache, and with no cache.
//
//	go test ./subagent -run '^$' -bench 'ListDescendants' -benchtime 3x -count 3 -benchmem
func BenchmarkListDescendants(b *testing.B) {
	const nodes = 10000
	parentOf := func(i int) string {
		if i < 10 {
			return "root"
		}
		return fmt.Sprintf("node-%05d", (i-10)/10)
	}
	b.Run("live", func(b *testing.B) {
		f := newCatFix(b)
		f.cat.Persisted = nil
		for i := range nodes {
			f.liveChild(childHeader(fmt.Sprintf("node-%05d", i), parentOf(i), int64(i)), descPayload("node", 2))
		}
		benchDescendants(b, f.cat, nodes)
	})
	// One cold corpus (1 KiB logs, warm cache rows, logs dated an hour
	// back) serves the three cold modes.
	var cold *realStack
	coldCorpus := func(b *testing.B) *realStack {
		if cold != nil {
			return cold
		}
		if corpusDir == "" {
			dir, err := os.MkdirTemp("", "acp-agent-catalog-bench-")
			if err != nil {
				b.Fatal(err)
			}
			corpusDir = dir
		}
		r := newRealStack(noCleanup{b}, filepath.Join(corpusDir, "descendants"))
		body := writeTemplate(b, r, 1<<10)
		snapValues, _ := r.reg.Restore(decodeBody(b, body))
		versions := r.reg.Versions()
		old := time.Now().Add(-time.Hour)
		for i := range nodes {
			h := session.Header{ID: fmt.Sprintf("node-%05d", i), CreatedAt: int64(i), ParentSession: parentOf(i), Origin: session.OriginSubagent, DelegationDepth: 1}
			line, _ := session.MarshalHeaderLine(h)
			file := append(append(line, '\n'), body...)
			path := filepath.Join(r.p.Dir(), h.ID+".jsonl")
			os.WriteFile(path, file, 0o600)
			os.Chtimes(path, old, old)
			row := projcache.Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: int64(len(file)), AsOfSeq: snapValues.AsOfSeq, Units: map[string]projcache.UnitValue{}}
			for k, v := range snapValues.Values {
				row.Units[k] = projcache.UnitValue{StateVersion: versions[k], Value: v}
			}
			r.cache.Put(row)
		}
		cold = r
		return r
	}
	for _, mode := range []string{"index", "warmcache", "nocache"} {
		b.Run("cold-"+mode, func(b *testing.B) {
			r := coldCorpus(b)
			cat := cloneCatalog(r.cat)
			switch mode {
			case "index":
				cat.Index = r.index
			case "nocache":
				cat.Cache = nil
			}
			// The first walk rebuilds whatever the index lacks.
			if _, err := cat.ListDescendants(context.Background(), "root"); err != nil {
				b.Fatal(err)
			}
			benchDescendants(b, cat, nodes)
		})
	}
}

func benchDescendants(b *testing.B, c *subagent.Catalog, nodes int) {
	ctx := context.Background()
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		rows, err := c.ListDescendants(ctx, "root")
		if err != nil || len(rows) != nodes {
			b.Fatal(len(rows), err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
}

// processCPU returns the user and system CPU time of the process so far.
// On a shared machine wall time per op swings with the load; CPU time per
// op (cpu-ns/op, all goroutines, kernel included) much less.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(processCPU()-since)/float64(b.N), "cpu-ns/op")
}

// TestMain removes the benchmark corpora, which outlive single benchmarks.
func TestMain(m *testing.M) {
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

// cloneCatalog copies c's configuration into a fresh catalog (its derived
// state is its own).
func cloneCatalog(c *subagent.Catalog) *subagent.Catalog {
	return &subagent.Catalog{Sessions: c.Sessions, Projections: c.Projections, Persisted: c.Persisted, Cache: c.Cache, Index: c.Index, Concurrency: c.Concurrency}
}
