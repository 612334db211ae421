package acp

import (
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestReplayedDelegationCarriesItsChildLink: a replayed tool call closes
// with the _meta its tool recorded with the result; delegations logged
// before the tools recorded one get the link derived from their raw output
// and the session's depth; other tools get none.
func TestReplayedDelegationCarriesItsChildLink(t *testing.T) {
	link := func(id, mode string, depth int) string {
		b, _ := json.Marshal(map[string]any{MetaSubagent: map[string]any{"childSessionId": id, "mode": mode, "depth": depth}})
		return string(b)
	}
	tests := []struct {
		name   string
		tool   string
		depth  int
		result string // tool/result data without message
		want   string // _meta of the closing update, "" for none
	}{
		{"recorded display meta", "subagent", 0,
			`"raw":{"kind":"continuable","subagentId":"c1"},"display":{"meta":` + link("c1", "continuable", 1) + `}`,
			link("c1", "continuable", 1)},
		{"recorded on a failure", "subagent_fork", 1,
			`"error":{"code":"SUBAGENT_RUN_FAILED","message":"x"},"display":{"meta":` + link("c2", "one-shot", 2) + `}`,
			link("c2", "one-shot", 2)},
		{"old log, background child", "subagent", 0,
			`"raw":{"kind":"continuable","subagentId":"c3"}`, link("c3", "continuable", 1)},
		{"old log, foreground child", "subagent", 1,
			`"raw":{"kind":"foreground","runId":"c4","output":[]}`, link("c4", "one-shot", 2)},
		{"old log, fork child", "subagent_fork", 0,
			`"raw":{"kind":"foreground","runId":"c5"}`, link("c5", "one-shot", 1)},
		{"old log, failed delegation", "subagent", 0, `"error":{"code":"X","message":"x"}`, ""},
		{"old log, unexpected raw", "subagent", 0, `"raw":"started"`, ""},
		{"another tool with the same raw shape", "echo", 0, `"raw":{"kind":"continuable","subagentId":"c6"}`, ""},
		{"another tool's own meta", "echo", 0, `"display":{"meta":{"x/y":1}}`, `{"x/y":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := []session.Event{
				{Seq: 0, Type: session.TypeToolCall, Data: json.RawMessage(`{"turn":1,"step":1,"callId":"call-1","name":"` + tt.tool + `","arguments":"{}"}`)},
				{Seq: 1, Type: session.TypeToolResult, Data: json.RawMessage(`{"turn":1,"step":1,"message":{"id":"m","role":"user","source":{"kind":"tool","callId":"call-1"},` +
					`"content":[{"type":"tool-result","toolCallId":"call-1","content":[{"type":"text","text":"t"}]}]},` + tt.result + `}`)},
			}
			for _, replay := range []bool{true, false} {
				tr := newTranslator(nil).withDepth(tt.depth)
				if replay {
					tr = tr.fresh() // a second load of a streaming session keeps the depth
				}
				var got string
				for _, ev := range events {
					for _, u := range tr.event(ev, replay) {
						if u.ToolCallUpdate != nil && u.ToolCallUpdate.Meta != nil {
							b, _ := json.Marshal(u.ToolCallUpdate.Meta)
							got = string(b)
						}
					}
				}
				if got != tt.want {
					t.Errorf("replay=%v: _meta = %s, want %s", replay, got, tt.want)
				}
			}
		})
	}
}
