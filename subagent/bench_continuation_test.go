package subagent_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// BenchmarkContinuableStartToSettle measures one continuable child from
// StartContinuable to its subagent/end, with a one-step scripted model and
// real JSONL persistence (fsync off). Each iteration uses a fresh parent so
// the parent's growing log does not distort later iterations.
func BenchmarkContinuableStartToSettle(b *testing.B) {
	m := scripted.New(&scripted.Script{Replies: map[string][]scripted.Reply{
		"child": {{Text: "done"}},
		"main":  {{Text: "noted"}},
	}})
	st, _ := durableStack(b, b.TempDir(), m)
	ends := make(chan string, 1)
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventEnd {
			ends <- ev.ID
		}
	})
	ctx := context.Background()
	var settle time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		parent := st.NewParent(b, fmt.Sprintf("parent-%d", i))
		b.StartTimer()
		t0 := time.Now()
		if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("go"), Parent: parent}); err != nil {
			b.Fatal(err)
		}
		<-ends
		settle += time.Since(t0)
		b.StopTimer()
		_ = parent.WaitIdle(ctx)
		_ = parent.Close(ctx)
		st.Agents.Unregister(parent)
		_ = st.Sessions.Remove(parent.ID())
		b.StartTimer()
	}
	b.ReportMetric(float64(settle.Nanoseconds())/float64(b.N), "settle-ns/op")
}

// BenchmarkSettledChildFootprint starts b.N continuable children, lets
// them settle (their parent is gone by then, so no notice grows a parent
// log) and reports what a settled child still holds: heap bytes per child,
// goroutines, resident activations and live sessions. All b.N children
// are in flight at once, so the stack has no background limit: with the
// default one (DefaultMaxBackground) the start past the limit would wait
// for a slot that only frees once the children it waits behind are
// released, after the last start.
func BenchmarkSettledChildFootprint(b *testing.B) {
	release := make(chan struct{})
	m := &funcModel{fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		<-release
		return []session.Chunk{{Type: session.ChunkText, Text: "done"}, {Type: session.ChunkFinish, Finish: model.FinishStop}}, nil
	}}
	ps, err := persistence.Open(b.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	st := subagenttest.New(b, subagenttest.Config{
		Model:         m,
		Attach:        func(s *session.Store) { ps.Attach(s) },
		Durable:       durable{ps},
		SyncTo:        ps.SyncTo,
		MaxBackground: -1,
	})
	ctx := context.Background()
	parent := st.NewParent(b, "parent")
	done := make(chan struct{}, 64)
	st.Runtime.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventEnd {
			done <- struct{}{}
		}
	})
	n := b.N
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("go"), Parent: parent}); err != nil {
			b.Fatal(err)
		}
	}
	st.Agents.Unregister(parent)
	close(release)
	for range n {
		<-done
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	b.ReportMetric(float64(heap)/float64(n), "heap-B/settled-child")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
	b.ReportMetric(float64(st.Runtime.ResidentCount()), "resident")
	b.ReportMetric(float64(len(st.Sessions.List())-1), "live-child-sessions")
	_ = st.Agents.Register(parent)
}
