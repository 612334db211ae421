package agent_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// longModel answers every turn with one echo tool call and then a text,
// and every summary request with a short summary; it records the largest
// request it saw (estimated tokens).
type longModel struct {
	maxTokens int
	requests  int
}

func (m *longModel) Stream(_ context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		m.requests++
		m.maxTokens = max(m.maxTokens, budget.EstimateRequest(req))
		last := req.Messages[len(req.Messages)-1]
		var c session.Chunk
		switch {
		case strings.HasSuffix(req.Caller.ScriptKey, agent.CompactScriptSuffix):
			c = session.Chunk{Type: session.ChunkText, Text: "## Intent\nkeep echoing\n## State\nmany echoes done"}
		case last.Role == model.RoleTool:
			c = session.Chunk{Type: session.ChunkText, Text: "echoed"}
		default:
			c = session.Chunk{Type: session.ChunkToolCall, ID: "c", Name: "echo", Arguments: `{"text":"` + strings.Repeat("y", 3000) + `"}`}
		}
		if yield(c, nil) {
			yield(session.Chunk{Type: session.ChunkFinish}, nil)
		}
	}
}

// BenchmarkLongSession runs a 2,000-turn scripted session (each turn a
// 3 kB tool result) against a 16k window: requests stay under the
// compaction threshold, and the time per turn of the last 200 turns is
// reported next to that of the first 200 (flat when compaction keeps the
// view bounded).
func BenchmarkLongSession(b *testing.B) {
	const turns = 2000
	for b.Loop() {
		s := newSession(b)
		m := &longModel{}
		cfg := budget.Config{Window: 16000}
		a := agent.New(s, agent.Options{Model: m, Tools: registry(b, echoTool()), Budget: cfg})
		var first, last time.Duration
		for i := range turns {
			start := time.Now()
			res, err := a.Prompt(context.Background(), userMsg("echo again"))
			if err != nil || res.Reason.Kind != session.TurnEndCompleted {
				b.Fatalf("turn %d: %+v %v", i, res.Reason, err)
			}
			switch d := time.Since(start); {
			case i < 200:
				first += d
			case i >= turns-200:
				last += d
			}
		}
		if err := a.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		if limit := cfg.Limit(model.Route{}); m.maxTokens > limit {
			b.Fatalf("a request held %d estimated tokens, over the limit %d", m.maxTokens, limit)
		}
		b.ReportMetric(float64(first.Microseconds())/200, "µs/turn-first200")
		b.ReportMetric(float64(last.Microseconds())/200, "µs/turn-last200")
		b.ReportMetric(float64(m.maxTokens), "max-request-tokens")
		b.ReportMetric(float64(len(ofType(s.MustEvents(), session.TypeCompaction))), "compactions")
	}
}
