package anthropic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/modeltest"
)

// TestToolSchemaSentAsIs: a tool's schema goes out byte for byte
// (compacted), whatever its keys, so its bytes cannot vary.
func TestToolSchemaSentAsIs(t *testing.T) {
	r := newReplay(t, sse(t, "text.sse"))
	if _, err := collect(newModel(t, r, nil), model.Request{Tools: modeltest.PrefixTools, Messages: modeltest.GrowingHistory()[0]}); err != nil {
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
	if err != nil || len(body.Tools) != len(modeltest.PrefixTools) {
		t.Fatalf("tools %+v: %v", body.Tools, err)
	}
	for i, tl := range body.Tools {
		var want bytes.Buffer
		_ = json.Compact(&want, modeltest.PrefixTools[i].Parameters)
		if tl.Name != modeltest.PrefixTools[i].Name || !bytes.Equal(tl.InputSchema, want.Bytes()) {
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
	for _, h := range modeltest.GrowingHistory() {
		if _, err := collect(m, model.Request{System: "You are a test.\n", Tools: modeltest.PrefixTools, Messages: h}); err != nil {
			t.Fatal(err)
		}
	}
	var prev [][]byte
	for i := range r.count() {
		r.mu.Lock()
		body := r.bodies[i]
		r.mu.Unlock()
		seq := prefixSequence(t, body)
		for j, el := range seq[len(modeltest.PrefixTools)+1:] {
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
