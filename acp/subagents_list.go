package acp

// This file defines the extension method "_acp-agent/subagents/list": a
// session's subagents (both modes, with labels, activity and diagnostics)
// as catalog rows. The catalog itself is the subagent runtime's; the
// server only needs the small SubagentCatalog view of it.

import (
	"context"
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/session"
)

// SubagentsListMethod is the ACP extension method listing a session's
// subagents.
const SubagentsListMethod = "_acp-agent/subagents/list"

// SubagentCatalog is what the subagents/list extension needs from the
// durable subagent catalog: the rows below a session, each a JSON-encodable
// value. Descendant rows carry parentId and depth.
type SubagentCatalog interface {
	ChildRows(ctx context.Context, sessionID string) ([]any, error)
	DescendantRows(ctx context.Context, sessionID string) ([]any, error)
}

// subagentsListParams are the extension's parameters.
type subagentsListParams struct {
	SessionID string `json:"sessionId"`
	// Scope is "children" (default) or "descendants".
	Scope string `json:"scope,omitempty"`
}

// subagentsListResult is the extension's answer: catalog rows in order.
type subagentsListResult struct {
	Entries []json.RawMessage `json:"entries"`
}

// SubagentsListExtension answers SubagentsListMethod from cat. Bad
// parameters are CodeInvalidParams (-32602); the catalog's own typed
// errors keep their codes through the server's error mapping.
func SubagentsListExtension(cat SubagentCatalog) ExtensionFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p subagentsListParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, errorf(CodeInvalidParams, "subagents/list params: %v", err)
		}
		if err := session.ValidateID(p.SessionID); err != nil {
			return nil, errorf(CodeInvalidParams, "subagents/list sessionId: %v", err)
		}
		var rows []any
		var err error
		switch p.Scope {
		case "", "children":
			rows, err = cat.ChildRows(ctx, p.SessionID)
		case "descendants":
			rows, err = cat.DescendantRows(ctx, p.SessionID)
		default:
			return nil, errorf(CodeInvalidParams, `subagents/list scope must be "children" or "descendants", got %q`, p.Scope)
		}
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, 0, len(rows))
		for _, r := range rows {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return subagentsListResult{Entries: out}, nil
	}
}
