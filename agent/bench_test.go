package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

type benchEcho struct{}

func (benchEcho) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "echo", Parameters: json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}

func (benchEcho) Execute(_ context.Context, inv tool.Invocation) (tool.Result, error) {
	return tool.TextResult(string(inv.Arguments), nil), nil
}

// BenchmarkTurn measures one scripted turn end to end in memory: a fresh
// session, Prompt through turn/end, Close.
func BenchmarkTurn(b *testing.B) {
	cases := []struct{ name, script string }{
		{"text", "model:\n  main:\n    - text: The quick brown fox jumps over the lazy dog.\n      usage: {input: 10, output: 9}\n"},
		{"tool-call", `model:
  main:
    - tool_calls: [{id: c1, name: echo, arguments: '{"text": "hello"}'}]
      usage: {input: 10, output: 5}
    - text: The quick brown fox jumps over the lazy dog.
      usage: {input: 20, output: 9}
`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			sc, err := scripted.Parse([]byte(c.script))
			if err != nil {
				b.Fatal(err)
			}
			m := scripted.New(sc)
			reg, err := tool.NewRegistry(benchEcho{})
			if err != nil {
				b.Fatal(err)
			}
			st := session.NewStore(&session.DeterministicSources{})
			msg := session.Message{Content: []session.Block{session.Text("Please do the thing now")}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s, err := st.Create(session.Header{}, session.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				a := New(s, Options{Model: m, Tools: reg})
				res, err := a.Prompt(ctx, msg)
				if err != nil || res.Reason.Kind != session.TurnEndCompleted {
					b.Fatalf("turn: %+v %v", res, err)
				}
				if err := a.Close(ctx); err != nil {
					b.Fatal(err)
				}
				if err := st.Remove(s.ID()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
