package anthropic

import (
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestThinkingSwitch: with a thinking budget the model offers the switch;
// a request sends extended thinking with the budget unless the session
// turned it off (NoThinking), and leaves it off for a tool step whose
// assistant message did not start with thinking (the API refuses thinking
// there), so thinking turned on mid-turn starts at the next user message.
func TestThinkingSwitch(t *testing.T) {
	toolStep := func(thought bool) []model.Message {
		asst := []session.Block{{Type: session.BlockToolCall, ID: "toolu_1", Name: "read", Arguments: `{}`}}
		if thought {
			asst = append([]session.Block{{Type: session.BlockReasoning, Text: "look", Signature: "sig"}}, asst...)
		}
		return []model.Message{
			{Role: session.RoleUser, Content: []session.Block{session.Text("hi")}},
			{Role: session.RoleAssistant, Content: asst},
			{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "toolu_1", Content: []session.Block{session.Text("ok")}}}},
		}
	}
	tests := []struct {
		name       string
		budget     int
		noThinking bool
		messages   []model.Message
		want       bool // thinking sent
	}{
		{"no budget", 0, false, nil, false},
		{"budget, on", 2048, false, nil, true},
		{"budget, off", 2048, true, nil, false},
		{"tool step after thinking", 2048, false, toolStep(true), true},
		{"tool step without thinking", 2048, false, toolStep(false), false},
		{"tool step after thinking, off", 2048, true, toolStep(true), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, sse(t, "text.sse"))
			m := newModel(t, r, func(c *Config) { c.ThinkingBudget = tt.budget })
			if got := model.SwitchesThinking(m); got != (tt.budget > 0) {
				t.Errorf("SwitchesThinking = %v with budget %d", got, tt.budget)
			}
			req := userReq("hi")
			if tt.messages != nil {
				req.Messages = tt.messages
			}
			req.NoThinking = tt.noThinking
			if _, err := collect(m, req); err != nil {
				t.Fatal(err)
			}
			th, sent := r.body(t, 0)["thinking"].(map[string]any)
			if sent != tt.want {
				t.Fatalf("thinking sent = %v (%v), want %v", sent, th, tt.want)
			}
			if sent && (th["type"] != "enabled" || th["budget_tokens"] != float64(tt.budget)) {
				t.Errorf("thinking = %v, want enabled with budget %d", th, tt.budget)
			}
		})
	}
}
