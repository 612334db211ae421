package model_test

import (
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// The reply the loop records and the recorder keeps come from the same
// fold of the chunks: reasoning blocks split at signatures and redacted
// data, tool calls assembled by index, the last usage, the finish.
func TestAccumulator(t *testing.T) {
	var a model.Accumulator
	for _, c := range []session.Chunk{
		{Type: session.ChunkReasoning, Text: "think "},
		{Type: session.ChunkReasoning, Text: "more", Signature: "s1"},
		{Type: session.ChunkReasoning, Data: "opaque"},
		{Type: session.ChunkReasoning, Text: "again"},
		{Type: session.ChunkText, Text: "hi "},
		{Type: session.ChunkToolCall, Index: 1, ID: "b", Name: "bash", Arguments: `{"c":`},
		{Type: session.ChunkToolCall, Index: 0, Name: "read", Arguments: `{}`},
		{Type: session.ChunkToolCall, Index: 1, Arguments: `1}`},
		{Type: session.ChunkText, Text: "there"},
		{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 3}},
		{Type: session.ChunkFinish, Finish: model.FinishLength, Usage: &session.Usage{InputTokens: 4, OutputTokens: 2}},
	} {
		a.Add(c)
	}
	if a.Chunks() != 11 || a.Text() != "hi there" || a.ReasoningText() != "think moreagain" {
		t.Errorf("chunks %d, text %q, reasoning %q", a.Chunks(), a.Text(), a.ReasoningText())
	}
	if u := a.Usage(); u == nil || u.InputTokens != 4 || u.OutputTokens != 2 {
		t.Errorf("usage = %+v, want the last one", u)
	}
	if a.Finish() != model.FinishLength || a.FinishReason() != model.FinishLength || a.ImpliedFinish() != model.FinishToolCalls {
		t.Errorf("finish %q, reason %q, implied %q", a.Finish(), a.FinishReason(), a.ImpliedFinish())
	}
	calls := a.Calls()
	if len(calls) != 2 || calls[0].ID != "b" || calls[0].Arguments() != `{"c":1}` || calls[1].Name != "read" || calls[1].ID != "" {
		t.Errorf("calls = %+v", calls)
	}
	reasoning := []session.Block{
		{Type: session.BlockReasoning, Text: "think more", Signature: "s1"},
		{Type: session.BlockReasoning, Data: "opaque"},
		{Type: session.BlockReasoning, Text: "again"},
	}
	interrupted := append(append([]session.Block(nil), reasoning...), session.Text("hi there"))
	if got := a.Content(true); !reflect.DeepEqual(got, interrupted) {
		t.Errorf("interrupted content = %+v\nwant %+v", got, interrupted)
	}
	whole := append(interrupted,
		session.Block{Type: session.BlockToolCall, ID: "b", Name: "bash", Arguments: `{"c":1}`},
		session.Block{Type: session.BlockToolCall, Name: "read", Arguments: `{}`})
	if got := a.Content(false); !reflect.DeepEqual(got, whole) {
		t.Errorf("content = %+v\nwant %+v", got, whole)
	}
}

// An empty reply implies stop; with only tool calls, tool-calls.
func TestAccumulatorImpliedFinish(t *testing.T) {
	var a model.Accumulator
	if a.FinishReason() != model.FinishStop || len(a.Content(false)) != 0 || a.Usage() != nil {
		t.Errorf("empty reply: finish %q, content %+v", a.FinishReason(), a.Content(false))
	}
	a.Add(session.Chunk{Type: session.ChunkToolCall, Index: 0, ID: "x", Name: "read"})
	if a.FinishReason() != model.FinishToolCalls {
		t.Errorf("finish = %q, want tool calls", a.FinishReason())
	}
}
