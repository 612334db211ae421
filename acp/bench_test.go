package acp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/benchtree"
	"github.com/acp-agent/acp-agent/persistence"
)

// BenchmarkPromptToFirstChunk measures, in process with the scripted
// model, the time from sending session/prompt to receiving the first
// agent_message_chunk (reported as first-chunk-ns, the mean, and its
// p50/p90). Each iteration uses a fresh session so the script's first
// reply applies. With fsync=true the log reaches the disk: the chunk is
// shown only after its group commit.
//
// go test ./acp -run '^$' -bench BenchmarkPromptToFirstChunk -benchtime 50x
func BenchmarkPromptToFirstChunk(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			ctx := context.Background()
			e := startCfg(b, b.TempDir(), loadScript(b, "model:\n  main:\n    - text: \"hello from the model\"\n"),
				func(cfg *app.Config) { cfg.Testing.NoSync = !fsync })
			e.initialize(ctx)
			cwd := tempCwd(b)
			var total time.Duration
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				id := e.newSession(ctx, cwd)
				e.rec.reset()
				b.StartTimer()
				began := time.Now()
				done := make(chan error, 1)
				go func() { _, err := e.prompt(ctx, id, "hi"); done <- err }()
				if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
					return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil })
				}); err != nil {
					b.Fatal(err)
				}
				d := time.Since(began)
				total += d
				times = append(times, d)
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "first-chunk-ns")
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(times[len(times)*9/10].Nanoseconds()), "p90-ns")
		})
	}
}

// BenchmarkStreamedAnswer1MB streams a 1 MB answer (512 chunks of 2 KiB,
// a word each: the SDK client's notification queue holds 1,024 and closes
// the connection when a test client on a loaded machine falls further
// behind) to the client with fsync on and reports the fsyncs taken per
// answer: the group commit bounds them by time and bytes, not by chunks.
//
// go test ./acp -run '^$' -bench BenchmarkStreamedAnswer1MB -benchtime 3x
func BenchmarkStreamedAnswer1MB(b *testing.B) {
	var text strings.Builder
	for i := 0; text.Len() < 1<<20; i++ {
		fmt.Fprintf(&text, "%02047d ", i)
	}
	var script strings.Builder
	script.WriteString("model:\n  main:\n")
	for range b.N {
		fmt.Fprintf(&script, "    - text: %q\n", text.String())
	}
	ctx := context.Background()
	var fsyncs atomic.Int64
	e := startCfg(b, b.TempDir(), loadScript(b, script.String()), func(cfg *app.Config) {
		cfg.Testing.NoSync = false
		cfg.Testing.StorageFault = func(p persistence.FaultPoint) {
			if p == persistence.FaultFsync {
				fsyncs.Add(1)
			}
		}
	})
	e.initialize(ctx)
	cwd := tempCwd(b)
	id := e.newSession(ctx, cwd)
	b.SetBytes(int64(text.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.rec.reset()
		r, err := e.prompt(ctx, id, "answer")
		if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
			b.Fatalf("prompt = %v, %v", r, err)
		}
		if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
			n := 0
			for _, x := range ns {
				if c := x.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
					n += len(c.Content.Text.Text)
				}
			}
			return n >= text.Len()
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(fsyncs.Load())/float64(b.N), "fsyncs/answer")
}

// globScript is a model turn of one `glob` call and a closing answer,
// for a fresh session (the script's replies are indexed by the session's
// steps).
const globScript = "model:\n  main:\n" +
	"    - tool_calls:\n        - id: call_glob\n          name: glob\n          arguments: '{\"pattern\": \"" + benchtree.GlobPattern + "\"}'\n" +
	"    - text: done\n"

// BenchmarkGlobTurn500 measures, in process over the real ACP connection,
// session/prompt to its end_turn response for a scripted turn whose one
// `glob` returns 500 paths (the tool call, its 500-line result shown to
// the client, and the closing answer), a fresh session per iteration
// (created outside the timing). With fsync=true the log reaches the disk,
// as in the binary; commits/turn counts the log's commits (each an fsync
// with fsync=true, a write without). cmd/acp-agent's
// BenchmarkBinaryGlobTurn500 is the same turn through the built binary,
// and toolset's BenchmarkGlob500 the tool alone.
//
//	go test ./acp -run '^$' -bench BenchmarkGlobTurn500 -benchmem -count 3
func BenchmarkGlobTurn500(b *testing.B) {
	for _, fsync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", fsync), func(b *testing.B) {
			ctx := context.Background()
			var fsyncs atomic.Int64
			e := startCfg(b, b.TempDir(), loadScript(b, globScript), func(cfg *app.Config) {
				cfg.Testing.NoSync = !fsync
				cfg.Testing.StorageFault = func(p persistence.FaultPoint) {
					if p == persistence.FaultFsync {
						fsyncs.Add(1)
					}
				}
			})
			e.initialize(ctx)
			cwd := tempCwd(b)
			if _, err := benchtree.Paths(cwd, 500); err != nil {
				b.Fatal(err)
			}
			var turnFsyncs int64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				id := e.newSession(ctx, cwd)
				e.rec.reset()
				before := fsyncs.Load()
				b.StartTimer()
				r, err := e.prompt(ctx, id, "list the Go files")
				turnFsyncs += fsyncs.Load() - before
				if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
					b.Fatalf("prompt = %v, %v", r, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(turnFsyncs)/float64(b.N), "commits/turn")
			if n := globPathsShown(e.rec.snapshot("")); n != 500 {
				b.Fatalf("the last turn showed %d paths, want 500", n)
			}
		})
	}
}

// globPathsShown counts the lines of the completed glob call's text.
func globPathsShown(ns []acpsdk.SessionNotification) int {
	for _, n := range ns {
		u := n.Update.ToolCallUpdate
		if u == nil || u.Status == nil || *u.Status != acpsdk.ToolCallStatusCompleted {
			continue
		}
		for _, c := range u.Content {
			if c.Content != nil && c.Content.Content.Text != nil {
				return strings.Count(c.Content.Content.Text.Text, "\n") + 1
			}
		}
	}
	return 0
}
