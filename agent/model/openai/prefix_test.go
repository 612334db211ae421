package openai

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
	// An MCP-style schema: keys in their own order.
	{Name: "mcp__demo__echo", Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema", "type":"object","title":"echo","properties":{"z":{"type":"string"},"a":{"type":"string"}},"additionalProperties":false,"description":"d"}`)},
}

// TestRequestPrefixStable: for each dialect, the serialized tools and
// messages (system first) of request N are, byte for byte, the leading
// elements of request N+1, so provider-side prompt caching sees the same
// prefix every turn.
func TestRequestPrefixStable(t *testing.T) {
	for _, provider := range []string{ProviderDeepSeek, ProviderOpenAI, ProviderCompatible} {
		t.Run(provider, func(t *testing.T) {
			r := newReplay(t, sseFile(t, "text.sse"))
			cfg := r.config()
			cfg.Provider = provider
			m := newModel(t, cfg)
			for _, h := range growingHistory() {
				if _, err := collect(t, t.Context(), m, model.Request{System: "You are a test.\n", Tools: prefixTools, Messages: h}); err != nil {
					t.Fatal(err)
				}
			}
			var prev [][]byte
			for i := range r.requests() {
				r.mu.Lock()
				body := r.bodies[i]
				r.mu.Unlock()
				var req struct {
					Tools    []json.RawMessage `json:"tools"`
					Messages []json.RawMessage `json:"messages"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatal(err)
				}
				seq := append(append([]json.RawMessage(nil), req.Tools...), req.Messages...)
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
				prev = make([][]byte, len(seq))
				for j, s := range seq {
					prev[j] = s
				}
			}
		})
	}
}

// TestUsageCachedTokens: both ways servers report cached prompt tokens
// reach the usage chunk.
func TestUsageCachedTokens(t *testing.T) {
	for _, tt := range []struct{ name, usage string }{
		{"openai", `{"prompt_tokens":1200,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1024}}`},
		{"deepseek", `{"prompt_tokens":1200,"completion_tokens":5,"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":176}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
				"data: {\"choices\":[],\"usage\":" + tt.usage + "}\n\ndata: [DONE]\n\n"
			r := newReplay(t, sseBytes([]byte(body)))
			got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			var u *session.Usage
			for _, c := range got {
				if c.Type == session.ChunkUsage {
					u = c.Usage
				}
			}
			if u == nil || *u != (session.Usage{InputTokens: 1200, OutputTokens: 5, CacheReadTokens: 1024}) {
				t.Fatalf("usage %+v", u)
			}
		})
	}
}
