package openai

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// TestBrokenStreamRetriedThroughReplayedSSE: the real provider against a
// replay server whose first answer stalls (--idle-timeout) or is cut
// after some chunks, mid-text and mid-tool-call; the agent keeps the
// partial reply in the log (interrupted, retried), sends the request again
// without it, and the turn completes; the next request holds the complete
// answer only, with alternating roles.
func TestBrokenStreamRetriedThroughReplayedSSE(t *testing.T) {
	text := readTestdata(t, "text.sse")
	cut := readTestdata(t, "cut.sse")
	for _, tt := range []struct {
		name  string
		first http.HandlerFunc
	}{
		{"stall mid text", stall(firstEvents(text, 2))},
		{"cut mid tool call", sseBytes(cut)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.first, sseBytes(text), sseBytes(text))
			cfg := r.config()
			cfg.IdleTimeout = 300 * time.Millisecond
			s, err := session.NewStore(&session.DeterministicSources{}).Create(session.Header{}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reg, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(s, agent.Options{Model: newModel(t, cfg), Tools: reg})
			defer a.Close(context.Background())
			for _, p := range []string{"question", "next"} {
				res, err := a.Prompt(t.Context(), session.Message{Content: []session.Block{session.Text(p)}})
				if err != nil || res.Reason.Kind != session.TurnEndCompleted {
					t.Fatalf("turn %q: %+v %v", p, res.Reason, err)
				}
			}
			if n := r.requests(); n != 3 {
				t.Fatalf("%d requests, want 3 (broken, retry, next turn)", n)
			}
			if a, b := mustJSONString(r.body(t, 0)["messages"]), mustJSONString(r.body(t, 1)["messages"]); a != b {
				t.Errorf("the retry is not the same request:\n%s\n%s", a, b)
			}
			var rolesSeen []string
			for _, m := range r.body(t, 2)["messages"].([]any) {
				rolesSeen = append(rolesSeen, m.(map[string]any)["role"].(string))
			}
			if got := strings.Join(rolesSeen, ","); got != "user,assistant,user" {
				t.Errorf("next request roles %s", got)
			}
			if b := mustJSONString(r.body(t, 2)); strings.Contains(b, "ial ans") || strings.Contains(b, "interrupted") {
				t.Errorf("the partial reply reached the model: %s", b)
			}
			var partial *session.AssistantMessageData
			for _, ev := range s.MustEvents() {
				if ev.Type == session.TypeAssistantMessage {
					d, _ := session.DecodeData[session.AssistantMessageData](ev)
					if d.Retried {
						partial = &d
					}
				}
			}
			if partial == nil || !partial.Interrupted || partial.Error == nil {
				t.Fatalf("no interrupted, retried partial reply in the log: %+v", partial)
			}
		})
	}
}
