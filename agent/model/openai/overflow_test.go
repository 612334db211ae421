package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// TestOverflowRecoveryThroughReplayedSSE: the real provider against a
// replay server that answers the second turn's first request with HTTP 400
// context_length_exceeded, then streams recorded SSE. The agent compacts
// once (the summary request is the third HTTP request), retries once, and
// the turn completes; the retried request carries the summary.
func TestOverflowRecoveryThroughReplayedSSE(t *testing.T) {
	text := sseFile(t, "text.sse")
	r := newReplay(t,
		text, // turn 1
		status(http.StatusBadRequest, nil, `{"error":{"message":"This model's maximum context length is 65536 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`),
		text, // the summary
		text, // the retry
	)
	m := newModel(t, r.config())
	st := session.NewStore(&session.DeterministicSources{})
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(s, agent.Options{Model: m, Tools: reg})
	defer a.Close(context.Background())
	for _, p := range []string{"first, a long prompt:the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, ", "second"} {
		res, err := a.Prompt(t.Context(), session.Message{Content: []session.Block{session.Text(p)}})
		if err != nil || res.Reason.Kind != session.TurnEndCompleted {
			t.Fatalf("turn %q: %+v %v", p, res.Reason, err)
		}
	}
	if n := r.requests(); n != 4 {
		t.Fatalf("HTTP requests = %d, want 4 (turn, refused, summary, retry)", n)
	}
	summaryReq := r.body(t, 2)
	if _, hasTools := summaryReq["tools"]; hasTools || !strings.Contains(mustJSONString(summaryReq), "## Intent") {
		t.Errorf("third request is not the summary request: %v", summaryReq)
	}
	retry := mustJSONString(r.body(t, 3))
	if !strings.Contains(retry, session.SummaryPrefix[:20]) || !strings.Contains(retry, "second") {
		t.Errorf("retried request lacks the summary or the prompt: %s", retry)
	}
	var n int
	for _, ev := range s.MustEvents() {
		if ev.Type == session.TypeCompaction {
			n++
			d, _ := session.DecodeData[session.CompactionData](ev)
			if d.Trigger != session.TriggerOverflow || d.Outcome != session.CompactionCompleted {
				t.Errorf("compaction %+v", d)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d compactions, want 1", n)
	}
}

func mustJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
