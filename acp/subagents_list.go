package acp

// This file defines the extension method "_acp-agent/subagents/list": a
// session's subagents (both modes, with labels, activity and diagnostics)
// as catalog rows. The catalog itself is the subagent runtime's; the
// server only needs the small SubagentCatalog view of it.

import (
	"bytes"
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
//
// held, when given, is the server's held-question queue
// (Options.Questions): a row of a child whose question is held for its
// root's next prompt, or was refused at its deadline, says so under
// "question" ({state, title, reason?}).
func SubagentsListExtension(cat SubagentCatalog, held ...*HeldQuestions) ExtensionFunc {
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
			for _, h := range held {
				if b, err = withQuestion(b, h); err != nil {
					return nil, err
				}
			}
			out = append(out, b)
		}
		return subagentsListResult{Entries: out}, nil
	}
}

// withQuestion adds the "question" field to row (a JSON object) when its
// child has a held or refused question in h; other rows keep their bytes.
// The row's own "question" (a refusal its log records, which survives a
// restart) gives way to h's state, which is newer.
func withQuestion(row []byte, h *HeldQuestions) ([]byte, error) {
	var head struct {
		ID       string          `json:"id"`
		Question json.RawMessage `json:"question"`
	}
	if h == nil || json.Unmarshal(row, &head) != nil || head.ID == "" {
		return row, nil
	}
	st, ok := h.State(head.ID)
	if !ok || len(row) < 2 || row[len(row)-1] != '}' {
		return row, nil
	}
	q, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	if len(head.Question) > 0 {
		// The row is compact JSON written by the catalog: "question": with
		// an unescaped quote before the colon occurs once, as the key.
		old := append([]byte(`"question":`), head.Question...)
		if bytes.Count(row, old) == 1 {
			return bytes.Replace(row, old, append([]byte(`"question":`), q...), 1), nil
		}
		return row, nil
	}
	out := append([]byte(nil), row[:len(row)-1]...)
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"question":`...)
	out = append(out, q...)
	return append(out, '}'), nil
}
