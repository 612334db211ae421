package acp

// This file derives the _meta of a finished tool call from the session log,
// so that session/load shows the same link from a delegation to its child
// session as the live stream did.

import (
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// withDepth sets the delegation depth of the session whose events t
// translates (its header's delegationDepth); children it delegates to sit
// one level deeper.
func (t *translator) withDepth(depth int) *translator {
	t.depth = depth
	return t
}

// noteCall remembers the tool name of a started call until its result.
func (t *translator) noteCall(callID, name string) {
	if t.names == nil {
		t.names = map[string]string{}
	}
	t.names[callID] = name
}

// resultMeta returns the _meta of the update that closes call callID with
// result d, or nil. A tool's recorded display meta wins. Delegations logged
// before delegation tools recorded it get their child link derived from
// the durable result: the child id and mode from the raw output
// ({"kind":"continuable","subagentId"} or {"kind":"foreground","runId"})
// and the depth from this session's own (children are created one level
// below their parent, as their headers record).
func (t *translator) resultMeta(callID string, d session.ToolResultData) map[string]any {
	name := t.names[callID]
	delete(t.names, callID)
	if d.Display != nil && len(d.Display.Meta) > 0 {
		return d.Display.Meta
	}
	if !delegation.IsStart(name) {
		return nil
	}
	id, mode, ok := delegation.ResultChild(d.Raw)
	if !ok {
		return nil
	}
	return delegation.ChildLink(id, mode, t.depth+1)
}

// noteDelegation remembers which call started the child meta links to.
func (t *translator) noteDelegation(callID string, meta map[string]any) {
	childID, ok := delegation.LinkedChild(meta)
	if !ok {
		return
	}
	if t.delegations == nil {
		t.delegations = map[string]string{}
	}
	t.delegations[childID] = callID
}
