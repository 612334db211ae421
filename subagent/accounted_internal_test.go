package subagent

import (
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestDelegatedChildren: the children a parent's log names are found in a
// start tool's raw output (continuable and foreground) and, for a failed
// run that has no raw output, in the child link of its display; each once,
// in log order; other results name none.
func TestDelegatedChildren(t *testing.T) {
	result := func(d session.ToolResultData) session.Event {
		return session.Event{Type: session.TypeToolResult, Data: session.MustData(d)}
	}
	events := []session.Event{
		result(session.ToolResultData{Raw: delegation.ContinuableResult("c1")}),
		result(session.ToolResultData{Raw: map[string]any{"kind": "other"}}),
		result(session.ToolResultData{Raw: delegation.ForegroundResult("c2", "done")}),
		result(session.ToolResultData{Display: &session.ToolDisplay{Meta: delegation.ChildLink("c3", "one-shot", 1)}}),
		result(session.ToolResultData{Raw: delegation.ContinuableResult("c1")}),
		result(session.ToolResultData{Raw: delegation.ContinuableResult("../bad")}),
		{Type: session.TypeUserMessage, Data: session.MustData(map[string]any{"subagentId": "c9"})},
	}
	if got, want := delegatedChildren(events), []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("delegatedChildren = %v, want %v", got, want)
	}
}
