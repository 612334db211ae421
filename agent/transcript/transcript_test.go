package transcript

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

func event(t *testing.T, typ string, data any) session.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: typ, Data: b}
}

// One log, both styles: each style shows what its reader needs and the
// walk is shared. The expected texts are the formats the sessions-show
// tests and the scenario goldens pin.
func TestStylesRenderOneLog(t *testing.T) {
	user := session.Message{Role: "user", Content: []session.Block{session.Text("fix <it>")}, Source: session.Source{Kind: session.SourceUser}}
	result := session.Message{Role: "tool", Source: session.Source{CallID: "c1"}, Content: []session.Block{
		{Type: session.BlockToolResult, ToolCallID: "c1", IsError: true, Content: []session.Block{session.Text("no such file")}},
	}}
	log := []session.Event{
		event(t, session.TypeTurnStart, session.TurnData{Turn: 1}),
		event(t, session.TypeUserMessage, user),
		event(t, session.TypeSessionTitle, session.TitleData{Title: "Fix it"}),
		event(t, session.TypeAssistantMessage, session.AssistantMessageData{Turn: 1, Message: session.Message{Content: []session.Block{
			{Type: session.BlockReasoning, Text: "look"}, session.Text("reading"),
		}}}),
		event(t, session.TypeToolCall, session.ToolCallData{Turn: 1, CallID: "c1", Name: "read", Arguments: `{ "path" : "a<b" }`}),
		event(t, session.TypeToolResult, session.ToolResultData{Turn: 1, Message: result}),
		event(t, session.TypeContextWindow, session.ContextWindowData{Provider: "deepseek", Model: "deepseek-chat", Window: 65536}),
		event(t, session.TypeNotice, session.NoticeData{Turn: 1, Step: 2, Kind: "retry", Message: "the answer broke off; retrying", Attempt: 1}),
		event(t, session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}),
		event(t, session.TypeTurnEnd, session.TurnEndData{Turn: 2, Reason: session.TurnEndReason{Kind: session.TurnEndError, Error: &session.ErrorInfo{Message: "boom"}}}),
		{Type: session.TypeUserMessage, Data: json.RawMessage(`"not a message"`)},
	}
	tests := []struct {
		style Style
		want  string
	}{
		{Inspect, "\n[user]\n  fix <it>\n" +
			"\n[thinking]\n  look\n" +
			"\n[assistant]\n  reading\n" +
			"\n[tool call c1] read {\"path\":\"a\\u003cb\"}\n" +
			"[tool result c1: failed]\n  no such file\n" +
			"\n[context window learned from the provider: 65536 tokens (deepseek/deepseek-chat)]\n" +
			"\n[notice] the answer broke off; retrying\n" +
			"\n[turn 2 ended error: boom]\n"},
		{Compact, "  turn 1\n" +
			"    user: fix <it>\n" +
			"    title: \"Fix it\"\n" +
			"    thought: look\n" +
			"    agent: reading\n" +
			"    tool call c1 read { \"path\" : \"a<b\" }\n" +
			"      error result of c1: no such file\n" +
			"    context window learned from the provider: 65536 tokens (deepseek/deepseek-chat)\n" +
			"    notice (retry): the answer broke off; retrying\n" +
			"    turn 1 ended: completed\n" +
			"    turn 2 ended: error: boom\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := Write(&b, log, tt.style); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%T rendered\n%s\nwant\n%s", tt.style.f, b.String(), tt.want)
		}
	}
}
