package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// TestBrokenStreamRetriedThroughReplayedSSE: a Messages stream cut after
// some text (and one whose overloaded error event comes after content) is
// retried once by the agent without the partial reply, which stays in the
// log interrupted and retried; the next request has the complete answer
// only, with alternating roles.
func TestBrokenStreamRetriedThroughReplayedSSE(t *testing.T) {
	for _, first := range []string{"cut.sse", "overloaded-event.sse"} {
		t.Run(first, func(t *testing.T) {
			text := sse(t, "text.sse")
			r := newReplay(t, sse(t, first), text, text)
			s, err := session.NewStore(&session.DeterministicSources{}).Create(session.Header{}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reg, err := tool.NewRegistry()
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(s, agent.Options{Model: newModel(t, r, nil), Tools: reg})
			defer a.Close(context.Background())
			for _, p := range []string{"question", "next"} {
				res, err := a.Prompt(t.Context(), session.Message{Content: []session.Block{session.Text(p)}})
				if err != nil || res.Reason.Kind != session.TurnEndCompleted {
					t.Fatalf("turn %q: %+v %v", p, res.Reason, err)
				}
			}
			if n := r.count(); n != 3 {
				t.Fatalf("%d requests, want 3 (broken, retry, next turn)", n)
			}
			a0, _ := jsonString(r.body(t, 0)["messages"])
			a1, _ := jsonString(r.body(t, 1)["messages"])
			if a0 != a1 {
				t.Errorf("the retry is not the same request:\n%s\n%s", a0, a1)
			}
			var roles []string
			for _, m := range r.body(t, 2)["messages"].([]any) {
				roles = append(roles, m.(map[string]any)["role"].(string))
			}
			if got := strings.Join(roles, ","); got != "user,assistant,user" {
				t.Errorf("next request roles %s", got)
			}
			if b, _ := jsonString(r.body(t, 2)); strings.Contains(b, "Half an ans") || strings.Contains(b, "interrupted") {
				t.Errorf("the partial reply reached the model: %s", b)
			}
			found := false
			for _, ev := range s.MustEvents() {
				if ev.Type == session.TypeAssistantMessage {
					d, _ := session.DecodeData[session.AssistantMessageData](ev)
					found = found || (d.Retried && d.Interrupted && d.Error != nil)
				}
			}
			if !found {
				t.Error("no interrupted, retried partial reply in the log")
			}
		})
	}
}
