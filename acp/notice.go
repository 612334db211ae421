package acp

// This file shows a model call's notices (a retry wait, the retry of an
// answer that broke off) to the person. ACP has no status line, so a
// notice is an agent_thought_chunk of its own line, marked in _meta so
// clients that know it can render it differently. A provider's retry
// waits are transient, so a replay does not show them; the retry of a
// broken answer is recorded (session/notice) and shown from the record,
// live and on replay alike.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
)

// MetaNotice is the _meta key of a transient notice: {kind, attempt,
// delayMs, status}.
const MetaNotice = "acp-agent/notice"

// noticeWorktree is the kind of the notice of a child's worktree settled
// at load (delegation.TypeWorktreeSettled): recorded, so shown on replay
// too.
const noticeWorktree = "worktree"

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
