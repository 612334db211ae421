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
	"github.com/acp-agent/acp-agent/persistence"
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
// view bounded). "memory" keeps the log in memory; "durable" persists it
// (fsync off), so the session keeps only a 64 KiB tail in memory and the
// loop reads older events back from the file: resident-events is what it
// held at the end, and the time per turn must stay flat all the same.
//
//	go test ./agent -run '^$' -bench BenchmarkLongSession -benchtime 1x
func BenchmarkLongSession(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := "memory"
		if durable {
			name = "durable"
		}
		b.Run(name, func(b *testing.B) { benchLongSession(b, durable) })
	}
}

func benchLongSession(b *testing.B, durable bool) {
	const turns = 2000
	for b.Loop() {
		var (
			s       *session.Session
			journal agent.Journal
		)
		if durable {
			ps, err := persistence.Open(b.TempDir(), persistence.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			st := session.NewStore(&session.DeterministicSources{})
			ps.Attach(st)
			if s, err = st.Create(session.Header{Cwd: "/work"}, session.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			defer ps.Close()
			journal = fileJournal{ps}
		} else {
			s = newSession(b)
		}
		m := &longModel{}
		cfg := budget.Config{Window: 16000}
		a := agent.New(s, agent.Options{Model: m, Tools: registry(b, echoTool()), Budget: cfg, Journal: journal})
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
		b.ReportMetric(float64(int64(s.Len())-s.Resident()), "resident-events")
	}
}

// fileJournal is the loop's write-ahead points on a persistence store, for
// a session nobody shows.
type fileJournal struct{ ps *persistence.Store }

func (j fileJournal) SyncTo(ctx context.Context, id string, seq int64) error {
	return j.ps.SyncTo(ctx, id, seq)
}

func (fileJournal) Shown(context.Context, string, int64) error { return nil }
