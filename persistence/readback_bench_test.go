package persistence

import (
	"context"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// BenchmarkReadBack reads a held session's whole written log back (about
// 20 MB of turns with streamed text) in batches of 4,096 events, as a
// streamed replay does, and reports the throughput.
//
//	go test ./persistence -run '^$' -bench ReadBack -benchtime 5x
func BenchmarkReadBack(b *testing.B) {
	ctx := context.Background()
	ps, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	st := session.NewStore(&session.DeterministicSources{Epoch: 1_700_000_000_000})
	ps.Attach(st)
	s, err := st.Create(session.Header{ID: "big", Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 9)
	for turn := 1; turn <= 1000; turn++ {
		mustAppend(b, s, session.TypeTurnStart, session.TurnData{Turn: turn})
		mustAppend(b, s, session.TypeStepStart, session.StepData{Turn: turn, Step: 1})
		for range 40 {
			mustAppend(b, s, session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: text}})
		}
		mustAppend(b, s, session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: session.Message{
			ID: "m", Role: session.RoleAssistant, Content: []session.Block{session.Text(strings.Repeat(text, 40))},
			Source: session.Source{Kind: session.SourceModel, Provider: "scripted"}}, Finish: "stop"})
		mustAppend(b, s, session.TypeStepEnd, session.StepData{Turn: turn, Step: 1})
		mustAppend(b, s, session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
		if turn%50 == 0 {
			if err := ps.Flush(ctx, "big"); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := ps.Flush(ctx, "big"); err != nil {
		b.Fatal(err)
	}
	n := ps.Readable("big")
	e, err := ps.Entry(ctx, "big")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(e.Size)
	b.ResetTimer()
	for b.Loop() {
		for from := int64(0); from < n; from += 4096 {
			if _, err := ps.ReadEvents("big", from, min(from+4096, n)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
