package subagent

// This file defines Listing, the runtime's read side (catalog §3.2, §3.3
// and list_agents status).

import (
	"context"

	"github.com/acp-agent/acp-agent/agent"
)

// Listing answers who the children of a session are. It owns no state: the
// durable rows come from the catalog, the live status from the agent
// registry.
type Listing struct {
	catalog Lister
	live    liveAgents
}

var (
	_ Lister      = (*Listing)(nil)
	_ AgentStatus = (*Listing)(nil)
)

// ListChildren lists parentID's session-backed children (catalog §3.2).
func (l *Listing) ListChildren(ctx context.Context, parentID string) ([]ListEntry, error) {
	if l.catalog == nil {
		return nil, NewError(CodeProjectionsUnavailable, "subagent listing requires session projections")
	}
	return l.catalog.ListChildren(ctx, parentID)
}

// ListDescendants lists every session-backed descendant of rootID in
// pre-order (catalog §3.3).
func (l *Listing) ListDescendants(ctx context.Context, rootID string) ([]DescendantEntry, error) {
	if l.catalog == nil {
		return nil, NewError(CodeProjectionsUnavailable, "subagent listing requires session projections")
	}
	return l.catalog.ListDescendants(ctx, rootID)
}

// AgentStatus reports the live registry's view of id (list_agents status).
func (l *Listing) AgentStatus(id string) (status string, live bool) {
	a := l.live.get(id)
	if a == nil {
		return "", false
	}
	if a.Status() == agent.StatusRunning {
		return StatusRunning, true
	}
	return StatusIdle, true
}
