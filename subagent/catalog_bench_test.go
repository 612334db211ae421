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
	"testing"

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

// cloneChildren writes d children of "parent" sharing the template body.
// With warm set, it also writes each child's cache row.
func cloneChildren(b *testing.B, r *realStack, body []byte, d int, warm bool) {
	snapValues, err := r.reg.Restore(decodeBody(b, body))
	if err != nil {
		b.Fatal(err)
	}
	versions := r.reg.Versions()
	for i := range d {
		h := session.Header{ID: fmt.Sprintf("child-%05d", i), CreatedAt: int64(100 + i), ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
		line, _ := session.MarshalHeaderLine(h)
		file := append(append(line, '\n'), body...)
		if err := os.WriteFile(filepath.Join(r.p.Dir(), h.ID+".jsonl"), file, 0o600); err != nil {
			b.Fatal(err)
		}
		if warm {
			row := projcache.Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: int64(len(file)), AsOfSeq: snapValues.AsOfSeq, Units: map[string]projcache.UnitValue{}}
			for k, v := range snapValues.Values {
				row.Units[k] = projcache.UnitValue{StateVersion: versions[k], Value: v}
			}
			if err := r.cache.Put(row); err != nil {
				b.Fatal(err)
			}
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

func BenchmarkListChildren(b *testing.B) {
	sizes := []struct {
		name  string
		bytes int
	}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}}
	templates := map[int][]byte{}
	for _, d := range []int{10, 100, 1000} {
		for _, sz := range sizes {
			for _, warm := range []bool{true, false} {
				cacheName := "nocache"
				if warm {
					cacheName = "warmcache"
				}
				b.Run(fmt.Sprintf("cold/D=%d/log=%s/%s", d, sz.name, cacheName), func(b *testing.B) {
					r := newRealStack(b, b.TempDir())
					body, ok := templates[sz.bytes]
					if !ok {
						body = writeTemplate(b, r, sz.bytes)
						templates[sz.bytes] = body
					}
					cloneChildren(b, r, body, d, warm)
					if !warm {
						r.cat.Cache = nil
					}
					ctx := context.Background()
					rows, err := r.cat.ListChildren(ctx, "parent")
					if err != nil || len(rows) != d || rows[0].Kind != subagent.KindChild {
						b.Fatalf("rows %d %v", len(rows), err)
					}
					r.disk.inspects.Store(0)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if _, err := r.cat.ListChildren(ctx, "parent"); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(r.disk.inspects.Load())/float64(b.N)/float64(d), "reads/child")
					b.ReportMetric(float64(len(body)), "logbytes")
				})
			}
		}
	}
	b.Run("live/D=1000", func(b *testing.B) {
		f := newCatFix(b)
		f.cat.Persisted = nil
		for i := range 1000 {
			f.runChild(childHeader(fmt.Sprintf("live-%05d", i), "parent", int64(i)), "live child")
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			rows, err := f.cat.ListChildren(ctx, "parent")
			if err != nil || len(rows) != 1000 {
				b.Fatal(len(rows), err)
			}
		}
	})
}

// BenchmarkListDescendants walks a 10,000-node tree (fan-out 10 under the
// root, every node a continuable subagent), live and cold with a warm cache.
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
	b.Run("cold-warmcache", func(b *testing.B) {
		r := newRealStack(b, b.TempDir())
		body := writeTemplate(b, r, 1<<10)
		snapValues, _ := r.reg.Restore(decodeBody(b, body))
		versions := r.reg.Versions()
		for i := range nodes {
			h := session.Header{ID: fmt.Sprintf("node-%05d", i), CreatedAt: int64(i), ParentSession: parentOf(i), Origin: session.OriginSubagent, DelegationDepth: 1}
			line, _ := session.MarshalHeaderLine(h)
			file := append(append(line, '\n'), body...)
			os.WriteFile(filepath.Join(r.p.Dir(), h.ID+".jsonl"), file, 0o600)
			row := projcache.Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: int64(len(file)), AsOfSeq: snapValues.AsOfSeq, Units: map[string]projcache.UnitValue{}}
			for k, v := range snapValues.Values {
				row.Units[k] = projcache.UnitValue{StateVersion: versions[k], Value: v}
			}
			r.cache.Put(row)
		}
		benchDescendants(b, r.cat, nodes)
	})
}

func benchDescendants(b *testing.B, c *subagent.Catalog, nodes int) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := c.ListDescendants(ctx, "root")
		if err != nil || len(rows) != nodes {
			b.Fatal(len(rows), err)
		}
	}
}
