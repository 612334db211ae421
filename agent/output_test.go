package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

func TestFinalOutput(t *testing.T) {
	msg := func(blocks ...session.Block) session.Event {
		return session.Event{Type: session.TypeAssistantMessage, Data: session.MustData(session.AssistantMessageData{
			Message: session.Message{Role: "assistant", Content: blocks}})}
	}
	chunk := func(typ, text string) session.Event {
		return session.Event{Type: session.TypeAssistantChunk, Data: session.MustData(session.AssistantChunkData{
			Chunk: session.Chunk{Type: typ, Text: text}})}
	}
	call := session.Block{Type: session.BlockToolCall, ID: "c1", Name: "echo", Arguments: "{}"}
	tests := []struct {
		name   string
		events []session.Event
		want   []session.Block
	}{
		{"last non-empty message", []session.Event{msg(session.Text("first")), msg(session.Text("second"))},
			[]session.Block{session.Text("second")}},
		{"empty usage-only message skipped", []session.Event{msg(session.Text("partial one"), call), msg()},
			[]session.Block{session.Text("partial one"), call}},
		{"chunk concatenation fallback", []session.Event{
			chunk(session.ChunkReasoning, "hmm"), chunk(session.ChunkText, "par"), chunk(session.ChunkText, "tial"), msg()},
			[]session.Block{session.Text("partial")}},
		{"none", []session.Event{chunk(session.ChunkReasoning, "only thinking"), {Type: session.TypeTurnEnd, Data: []byte(`{}`)}},
			[]session.Block{}},
		{"no events", nil, []session.Block{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agent.FinalOutput(tt.events)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("FinalOutput = %s, want %s", gj, wj)
			}
		})
	}
}

func TestFallbackTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Reply with exactly the word CHILD_OK and nothing else.", "Reply with exactly the word"},
		{"  two   words ", "two words"},
		{"Supercalifragilistic expialidocious wonderfully extraordinary things", "Supercalifragilistic expialidocious"},
		{"ääääääääääääääääääääääääääääääääääääääääää", "ääääääääääääääääääää"},
		{"", ""},
	}
	for _, tt := range tests {
		got := agent.FallbackTitle([]session.Block{session.Text(tt.in)})
		if got != tt.want || len(got) > 40 {
			t.Errorf("FallbackTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
