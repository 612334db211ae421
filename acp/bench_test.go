package acp_test

import (
	"context"
	"slices"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// BenchmarkPromptToFirstChunk measures, in process with the scripted
// model, the time from sending session/prompt to receiving the first
// agent_message_chunk (reported as first-chunk-ns). Each iteration uses a
// fresh session so the script's first reply applies.
func BenchmarkPromptToFirstChunk(b *testing.B) {
	ctx := context.Background()
	e := start(b, b.TempDir(), loadScript(b, "model:\n  main:\n    - text: \"hello from the model\"\n"))
	e.initialize(ctx)
	cwd := tempCwd(b)
	var total time.Duration
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
		total += time.Since(began)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "first-chunk-ns")
}
