package subagent_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// BenchmarkLiveChildrenRSS starts 1,000 continuable children through the
// runtime (real agents, real JSONL persistence, fsync off) whose model
// call blocks, so all of them are live and running at once, then lists
// them (the timed part) with the catalog as the app wires it: projection
// registry, cache and index. It reports the process's resident set
// (rss-MB, from /proc/self/status) and the Go heap in use with all
// children live.
//
//	go test ./subagent -run '^$' -bench LiveChildrenRSS -benchtime 3x -benchmem
func BenchmarkLiveChildrenRSS(b *testing.B) {
	const children = 1000
	release := make(chan struct{})
	var calls atomic.Int64
	started := make(chan struct{})
	m := &funcModel{fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		if calls.Add(1) == children {
			close(started)
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []session.Chunk{{Type: session.ChunkText, Text: "done"}, {Type: session.ChunkFinish, Finish: model.FinishStop}}, nil
	}}
	dir := b.TempDir()
	// All 1,000 run at once (durableStackNoLimit).
	st, ps := durableStackNoLimit(b, dir, m)
	defer close(release)
	cat, index := appCatalog(b, dir, st, ps)
	ctx := context.Background()
	parent := st.NewParent(b, "parent")
	for range children {
		if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("go"), Parent: parent}); err != nil {
			b.Fatal(err)
		}
	}
	<-started
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := residentMB(b)
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		rows, err := cat.ListChildren(ctx, "parent")
		if err != nil || len(rows) != children || rows[0].Activity != subagent.ActivityRunning {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(index.headerReads.Load()), "header-reads")
}

// residentMB reads VmRSS from /proc/self/status (Linux); 0 elsewhere.
func residentMB(b *testing.B) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	return 0
}

// appCatalog wires a catalog over st and ps as the app does: the
// projection registry (subagent units and the title) attached to the live
// store, the projection cache and its index, whose header reads it counts.
func appCatalog(b *testing.B, dir string, st *subagenttest.Stack, ps *persistence.Store) (*subagent.Catalog, *indexReader) {
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Register(projection.Title()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Attach(st.Sessions))
	cache, err := projcache.Open(dir, reg)
	if err != nil {
		b.Fatal(err)
	}
	index := &indexReader{}
	index.x = cache.Index(ps.Dir(), func(ctx context.Context, id string) (session.Header, error) {
		index.headerReads.Add(1)
		e, err := ps.Entry(ctx, id)
		return e.Header, err
	})
	return &subagent.Catalog{Sessions: st.Sessions, Projections: reg, Persisted: durable{ps}, Cache: cache, Index: index}, index
}
