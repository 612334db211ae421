package openai

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/modeltest"
	"github.com/acp-agent/acp-agent/agent/session"
)

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
			for _, h := range modeltest.GrowingHistory() {
				if _, err := collect(t, t.Context(), m, model.Request{System: "You are a test.\n", Tools: modeltest.PrefixTools, Messages: h}); err != nil {
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
