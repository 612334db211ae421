package acp

// This file shows a model call's transient notices (a retry wait) to the
// person. ACP has no status line, so a notice is an agent_thought_chunk of
// its own line, marked in _meta so clients that know it can render it
// differently. Notices are not logged, so a replay does not show them.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
)

// MetaNotice is the _meta key of a transient notice: {kind, attempt,
// delayMs, status}.
const MetaNotice = "acp-agent/notice"

func noticeUpdate(n model.Notice) []acpsdk.SessionUpdate {
	if n.Message == "" {
		return nil
	}
	u := acpsdk.UpdateAgentThoughtText("\n" + n.Message + "\n")
	u.AgentThoughtChunk.Meta = map[string]any{MetaNotice: map[string]any{
		"kind": n.Kind, "attempt": n.Attempt, "delayMs": n.Delay.Milliseconds(), "status": n.Status,
	}}
	return []acpsdk.SessionUpdate{u}
}
