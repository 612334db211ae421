package acp

// This file maps the todo tool to ACP plan updates. The plan is derived
// from the log only: a successful todo call's result records the whole
// normalized list (its raw value), so the translator emits one "plan"
// update per such result, live and on session/load alike, and a replay
// ends on the latest plan.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/todo"
)

// notePlanCall remembers a todo call, so its result becomes a plan update.
func (t *translator) notePlanCall(d session.ToolCallData) {
	if d.Name != todo.Name {
		return
	}
	if t.planCalls == nil {
		t.planCalls = map[string]bool{}
	}
	t.planCalls[d.CallID] = true
}

// planUpdate returns the plan update of a todo call's result (none for
// other calls and failed todo calls).
func (t *translator) planUpdate(d session.ToolResultData) []acpsdk.SessionUpdate {
	id := ""
	for _, b := range d.Message.Content {
		if b.Type == session.BlockToolResult {
			id = b.ToolCallID
			break
		}
	}
	if !t.planCalls[id] {
		return nil
	}
	delete(t.planCalls, id)
	l, ok := todo.FromResult(d)
	if !ok {
		return nil
	}
	return []acpsdk.SessionUpdate{planOf(l)}
}

// planOf renders a todo list as an ACP plan update (entries is never null).
func planOf(l todo.List) acpsdk.SessionUpdate {
	entries := make([]acpsdk.PlanEntry, 0, len(l.Todos))
	for _, it := range l.Todos {
		entries = append(entries, acpsdk.PlanEntry{
			Content:  it.Content,
			Status:   acpsdk.PlanEntryStatus(it.Status),
			Priority: acpsdk.PlanEntryPriority(it.Priority),
		})
	}
	return acpsdk.SessionUpdate{Plan: &acpsdk.SessionUpdatePlan{Entries: entries}}
}
