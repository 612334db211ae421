package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// growingHistory is a conversation as the agent loop records it, cut
// after each model call: request i sends steps[:i+1].
func growingHistory() [][]model.Message {
	u := func(s string) model.Message {
		return model.Message{Role: session.RoleUser, Content: []session.Block{session.Text(s)}}
	}
	steps := [][]model.Message{
		{u("fix the test")},
		{
			{Role: session.RoleAssistant, Content: []session.Block{
				{Type: session.BlockReasoning, Text: "read it first", Signature: "sig-1"},
				session.Text("Reading."),
				{Type: session.BlockToolCall, ID: "t1", Name: "read", Arguments: `{"path":"a_test.go"}`},
			}},
			{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "t1", Content: []session.Block{session.Text("package a")}}}},
		},
		{
			{Role: session.RoleAssistant, Content: []session.Block{session.Text("Done.")}},
			u("now run it"),
		},
		{
			{Role: session.RoleAssistant, Content: []session.Block{{Type: session.BlockToolCall, ID: "t2", Name: "bash", Arguments: `{"command":"go test ./..."}`}}},
			{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "t2", Content: []session.Block{session.Text("ok")}}}},
		},
	}
	var out [][]model.Message
	var h []model.Message
	for _, s := range steps {
		h = append(h, s...)
		out = append(out, append([]model.Message(nil), h...))
	}
	return out
}

var prefixTools = []model.ToolSpec{
	{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"]}`)},
	{Name: "bash", Description: "Run a command.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"],"additionalProperties":false}`)},
	// An MCP-style schema: keys in their own order, several beyond
	// properties and required.
	{Name: "mcp__demo__echo", Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema", "type":"object","title":"echo","properties":{"z":{"type":"string"},"a":{"type":"string"}},"additionalProperties":false,"description":"d"}`)},
}

// TestToolSchemaSentAsIs: a tool's schema goes out byte for byte
// (compacted), whatever its keys, so its bytes cannot vary.
func TestToolSchemaSentAsIs(t *testing.T) {
	r := newReplay(t, sse(t, "text.sse"))
	if _, err := collect(newModel(t, r, nil), model.Request{Tools: prefixTools, Messages: growingHistory()[0]}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	r.mu.Lock()
	err := json.Unmarshal(r.bodies[0], &body)
	r.mu.Unlock()
	if err != nil || len(body.Tools) != len(prefixTools) {
		t.Fatalf("tools %+v: %v", body.Tools, err)
	}
	for i, tl := range body.Tools {
		var want bytes.Buffer
		_ = json.Compact(&want, prefixTools[i].Parameters)
		if tl.Name != prefixTools[i].Name || !bytes.Equal(tl.InputSchema, want.Bytes()) {
			t.Errorf("tool %d sent as %s %s, want %s", i, tl.Name, tl.InputSchema, want.Bytes())
		}
	}
}

// prefixSequence is a request in the order the API builds its cache
// prefix: each tool, the system prompt, each message, as sent.
func prefixSequence(t *testing.T, body []byte) [][]byte {
	t.Helper()
	var r struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	seq := append([]json.RawMessage(nil), r.Tools...)
	seq = append(seq, r.System)
	seq = append(seq, r.Messages...)
	out := make([][]byte, len(seq))
	for i, s := range seq {
		out[i] = s
	}
	return out
}

// TestRequestPrefixStable: the serialized tools, system prompt and
// messages of request N are, byte for byte, the leading elements of
// request N+1 (what prompt caching needs), and no message carries a
// cache marker that would move.
func TestRequestPrefixStable(t *testing.T) {
	r := newReplay(t, sse(t, "text.sse"))
	m := newModel(t, r, nil)
	for _, h := range growingHistory() {
		if _, err := collect(m, model.Request{System: "You are a test.\n", Tools: prefixTools, Messages: h}); err != nil {
			t.Fatal(err)
		}
	}
	var prev [][]byte
	for i := range r.count() {
		r.mu.Lock()
		body := r.bodies[i]
		r.mu.Unlock()
		seq := prefixSequence(t, body)
		for j, el := range seq[len(prefixTools)+1:] {
			if bytes.Contains(el, []byte("cache_control")) {
				t.Errorf("request %d message %d carries a cache marker: %s", i, j, el)
			}
		}
		if prev != nil {
			if len(seq) <= len(prev) {
				t.Fatalf("request %d has %d elements, not more than %d", i, len(seq), len(prev))
			}
			for j := range prev {
				if !bytes.Equal(prev[j], seq[j]) {
					t.Fatalf("request %d element %d changed:\n%s\nwas\n%s", i, j, seq[j], prev[j])
				}
			}
		}
		prev = seq
	}
}
