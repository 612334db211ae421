package persistence

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// typicalEvents is one cycle of a streamed step: text chunks, the final
// assistant message, a tool call and its result (lines of ~200 bytes).
func typicalEvents() []session.Event {
	text := strings.Repeat("streamed text ", 7)
	mk := func(typ string, v any) session.Event { return session.Event{Type: typ, Data: session.MustData(v)} }
	chunk := mk(session.TypeAssistantChunk, session.AssistantChunkData{Turn: 3, Step: 2, Chunk: session.Chunk{Type: session.ChunkText, Text: text}})
	return []session.Event{
		chunk, chunk, chunk, chunk, chunk, chunk,
		mk(session.TypeAssistantMessage, session.AssistantMessageData{Turn: 3, Step: 2, Message: session.Message{
			ID: "8a0e1d3c-5b7f-4e2a-9c41-6d2f0b8e7a13", Role: session.RoleAssistant, Content: []session.Block{session.Text(text)},
			Source: session.Source{Kind: session.SourceModel, Provider: "scripted"}}}),
		mk(session.TypeToolCall, session.ToolCallData{Turn: 3, Step: 2, CallID: "call-2f9c", Name: "read", Arguments: `{"path":"internal/agent/loop.go","limit":200}`}),
		mk(session.TypeToolResult, session.ToolResultData{Turn: 3, Step: 2, Message: session.Message{
			ID: "1c2d", Role: session.RoleUser, Source: session.Source{Kind: session.SourceTool, CallID: "call-2f9c"},
			Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "call-2f9c", Content: []session.Block{session.Text(text)}}}}}),
	}
}

// BenchmarkAppend measures events/s through the write-behind path: a live
// session appends events, the observer buffers them, and Checkpoint writes
// (and optionally fsyncs) every `every` events.
//
// go test ./persistence -run '^$' -bench BenchmarkAppend -benchmem
func BenchmarkAppend(b *testing.B) {
	evs := typicalEvents()
	var line bytes.Buffer
	encodeEvents(&line, evs)
	avg := int64(line.Len() / len(evs))
	for _, fsync := range []bool{true, false} {
		for _, every := range []int{8, 64, 512} {
			name := fmt.Sprintf("fsync=%v/every=%d", fsync, every)
			b.Run(name, func(b *testing.B) {
				ps, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler), NoSync: !fsync})
				if err != nil {
					b.Fatal(err)
				}
				defer ps.Close()
				st := session.NewStore(nil)
				defer ps.Attach(st)()
				var s *session.Session
				rotate := func() {
					if s != nil {
						st.Remove(s.ID())
					}
					if s, err = st.Create(session.Header{}, session.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				rotate()
				b.SetBytes(avg)
				n := 0
				for b.Loop() {
					ev := evs[n%len(evs)]
					if _, err := s.AppendRaw(ev.Type, ev.Data); err != nil {
						b.Fatal(err)
					}
					n++
					if n%every == 0 {
						if err := ps.Flush(b.Context(), s.ID()); err != nil {
							b.Fatal(err)
						}
					}
					if n%100_000 == 0 { // bound the in-memory log
						rotate()
					}
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkList lists stores of many sessions; the cost per session must
// not depend on log size. "floor" opens and closes every file and nothing
// else, for comparison.
//
// go test ./persistence -run '^$' -bench BenchmarkList -benchmem
func BenchmarkList(b *testing.B) {
	for _, c := range []struct {
		sessions int
		logSize  int
	}{{10_000, 1 << 10}, {1_000, 1 << 20}} {
		name := fmt.Sprintf("%dx%dKB", c.sessions, c.logSize>>10)
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			generateStore(b, dir, c.sessions, c.logSize)
			ps, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer ps.Close()
			b.Run("list", func(b *testing.B) {
				n := 0
				for b.Loop() {
					es, err := ps.List(b.Context())
					if err != nil || len(es) != c.sessions {
						b.Fatalf("listed %d, %v", len(es), err)
					}
					n++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*c.sessions), "ns/session")
			})
			b.Run("floor", func(b *testing.B) {
				names, err := readDirNames(ps.Dir())
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for b.Loop() {
					for _, name := range names {
						f, err := os.Open(filepath.Join(ps.Dir(), name))
						if err != nil {
							b.Fatal(err)
						}
						f.Close()
					}
					n++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*c.sessions), "ns/session")
			})
		})
	}
}

// generateStore writes n session files of about size bytes each: a header
// and typical event lines.
func generateStore(b *testing.B, dir string, n, size int) {
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		b.Fatal(err)
	}
	evs := typicalEvents()
	var body bytes.Buffer
	for seq := 0; body.Len() < size-300; seq++ {
		ev := evs[seq%len(evs)]
		ev.Seq, ev.Time = int64(seq), 1_700_000_000_000
		ev.SurfaceOp = nil
		if session.SurfaceTypes[ev.Type] {
			ev.SurfaceOp = session.AppendOp
		}
		encodeEvents(&body, []session.Event{ev})
	}
	for i := range n {
		id := session.HashID("bench", int64(i))
		h, _ := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1_700_000_000_000 + int64(i), Cwd: "/work/project", Origin: session.OriginSubagent, ParentSession: "root", DelegationDepth: 1})
		data := append(append(h, '\n'), body.Bytes()...)
		if err := os.WriteFile(filepath.Join(sdir, id+".jsonl"), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInspect measures a cold read of one 1 MB log: the cost the
// catalog pays per child on a projection-cache miss.
//
// go test ./persistence -run '^$' -bench BenchmarkInspect -benchmem
func BenchmarkInspect(b *testing.B) {
	dir := b.TempDir()
	generateStore(b, dir, 1, 1<<20)
	p, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	id := session.HashID("bench", 0)
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Inspect(b.Context(), id); err != nil {
			b.Fatal(err)
		}
	}
}
