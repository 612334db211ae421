package subagent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

// BenchmarkLiveChildrenLargeLogsRSS measures the memory of 1,000 live
// children whose logs hold about 1 MiB each: a long day's continuable
// children. Each child is started for real (real agents, real JSONL
// persistence, fsync off) and settles; its log is then grown on disk to
// about 1 MiB of complete turns (a request, 40 streamed chunks, the
// answer, a tool call and its result), and a follow-up resumes all of them
// (cold resume: load, adopt, a new turn) into a model call that blocks, so
// all 1,000 are live and running at once. The timed part lists them
// through the catalog as the app wires it. It reports the process's
// resident set (rss-MB), the Go heap in use (heap-MB) and the logs' bytes
// on disk (log-MB).
//
// Two shapes of log: "compacted" ends with a completed compaction (the
// summary stands for everything before the last turn), as a log that
// outgrew its context window does; "whole-view" has none, so the model's
// view, which the next request needs, is the whole conversation.
//
//	go test ./subagent -run '^$' -bench LiveChildrenLargeLogsRSS -benchtime 3x
func BenchmarkLiveChildrenLargeLogsRSS(b *testing.B) {
	for _, compacted := range []bool{true, false} {
		name := "whole-view"
		if compacted {
			name = "compacted"
		}
		b.Run(name, func(b *testing.B) { benchLiveLargeChildren(b, compacted) })
	}
}

func benchLiveLargeChildren(b *testing.B, compacted bool) {
	const (
		children = 1000
		logSize  = 1 << 20
	)
	release := make(chan struct{})
	var resumed atomic.Int64
	allResumed := make(chan struct{})
	m := &funcModel{fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		last := req.Messages[len(req.Messages)-1]
		if req.Caller.SessionID != "parent" && strings.Contains(session.JoinText(last.Content, ""), "resume") {
			if resumed.Add(1) == children {
				close(allResumed)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return []session.Chunk{{Type: session.ChunkText, Text: "done"}, {Type: session.ChunkFinish, Finish: model.FinishStop}}, nil
	}}
	dir := b.TempDir()
	// All 1,000 resumed children run at once: a cold resume takes a slot
	// like a start.
	st, ps := durableStackNoLimit(b, dir, m)
	defer close(release)
	cat, _ := appCatalog(b, dir, st, ps)
	ctx := context.Background()
	parent := st.NewParent(b, "parent")
	ids := make([]string, 0, children)
	for range children {
		id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "child", Prompt: text("go"), Parent: parent})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitFor(b, func() bool {
		for _, id := range ids {
			if _, live := st.Sessions.Get(id); live {
				return false
			}
		}
		return true
	})
	if err := parent.WaitIdle(ctx); err != nil {
		b.Fatal(err)
	}
	var logs int64
	for _, id := range ids {
		logs += growLog(b, filepath.Join(ps.Dir(), id+".jsonl"), logSize, compacted)
	}
	for _, id := range ids {
		if _, err := st.Runtime.Followup(ctx, parent, id, text("resume")); err != nil {
			b.Fatal(err)
		}
	}
	<-allResumed
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := residentMB(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rows, err := cat.ListChildren(ctx, "parent")
		if err != nil || len(rows) != children || rows[0].Activity != subagent.ActivityRunning {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric(float64(logs)/(1<<20), "log-MB")
}

// waitFor polls cond (a benchmark's setup, not a test's assertion).
func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("setup did not settle in 10 minutes")
		}
	}
}

// growLog appends complete turns to the settled log at path until it
// holds about size bytes (and, when compacted, a compaction turn whose
// summary stands for all but the last turn). It returns the file's size.
func growLog(b *testing.B, path string, size int64, compacted bool) int64 {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	seq := int64(strings.Count(string(data), "\n")) - 1
	var lastTurn int
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, l := range lines[1:] {
		var ev session.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			b.Fatal(err)
		}
		if ev.Type == session.TypeTurnStart {
			d, _ := session.DecodeData[session.TurnData](ev)
			lastTurn = d.Turn
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	written := int64(len(data))
	const epoch = 1_800_000_000_000
	add := func(typ string, v any, sources ...int64) int64 {
		ev := session.Event{Type: typ, Seq: seq, Time: epoch + seq, Data: session.MustData(v), SourceEventSeqs: sources}
		if session.SurfaceTypes[typ] {
			ev.SurfaceOp = session.AppendOp
		}
		if err := enc.Encode(ev); err != nil {
			b.Fatal(err)
		}
		written += int64(len(ev.Data)) + 80
		seq++
		return ev.Seq
	}
	word := "the quick brown fox jumps over the lazy dog while streaming tokens "
	chunkText := strings.Repeat(word, 6)
	var lastSurface int64
	turn := lastTurn
	for written < size-8<<10 {
		turn++
		add(session.TypeTurnStart, session.TurnData{Turn: turn})
		add(session.TypeUserMessage, session.Message{ID: fmt.Sprintf("u%d", turn), Role: session.RoleUser,
			Content: []session.Block{session.Text(fmt.Sprintf("Look at the code, part %d", turn))}, Source: session.Source{Kind: session.SourceUser}})
		add(session.TypeStepStart, session.StepData{Turn: turn, Step: 1})
		var chunks []int64
		for range 40 {
			chunks = append(chunks, add(session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: chunkText}}))
		}
		callID := fmt.Sprintf("call_%d", turn)
		add(session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: session.Message{
			ID: fmt.Sprintf("a%d", turn), Role: session.RoleAssistant,
			Content: []session.Block{session.Text(strings.Repeat(chunkText, 40)), {Type: session.BlockToolCall, ID: callID, Name: "list_agents", Arguments: `{}`}},
			Source:  session.Source{Kind: session.SourceModel, Provider: "mock"}}, Finish: "tool-calls"}, chunks...)
		call := add(session.TypeToolCall, session.ToolCallData{Turn: turn, Step: 1, CallID: callID, Name: "list_agents", Arguments: `{}`})
		lastSurface = add(session.TypeToolResult, session.ToolResultData{Turn: turn, Step: 1, Message: session.Message{
			ID: fmt.Sprintf("r%d", turn), Role: session.RoleUser, Source: session.Source{Kind: session.SourceTool, CallID: callID},
			Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: callID, Content: []session.Block{session.Text(strings.Repeat(word, 30))}}}}}, call)
		add(session.TypeStepEnd, session.StepData{Turn: turn, Step: 1})
		add(session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
	}
	if compacted {
		turn++
		add(session.TypeTurnStart, session.TurnData{Turn: turn})
		add(session.TypeCompaction, session.CompactionData{ID: fmt.Sprintf("c%d", turn), Trigger: session.TriggerAuto, Outcome: session.CompactionCompleted,
			UpTo: lastSurface, Summary: strings.Repeat("The child read the code and reported on it. ", 40), PreTokens: 250_000, PostTokens: 600})
		add(session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
