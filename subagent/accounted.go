package subagent

// This file makes the catalog account for every child the parent knows:
// besides the children found by their headers, the parent's own
// delegation records name children, and one whose log is gone, unreadable
// or names another parent (or itself) gets a diagnostic row rather than
// being left out without a word.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// ReasonMissing: the parent's log names a child whose log does not exist.
const ReasonMissing Reason = "missing"

// ProblemChecker is optionally implemented by a Catalog's Persisted
// reader: Problem says why the stored log of id has no readable header
// ("named pipe, not a session file", "empty file, no header", ...); ok is
// false when its header reads fine or it does not exist.
type ProblemChecker interface {
	Problem(ctx context.Context, id string) (problem string, ok bool)
}

// namesChild is a byte check for the keys a delegation result names its
// child under (raw output, child link).
func namesChild(data []byte) bool {
	return bytes.Contains(data, []byte(`"subagentId"`)) || bytes.Contains(data, []byte(`"runId"`)) ||
		bytes.Contains(data, []byte(`"childSessionId"`))
}

// delegatedChildren returns the child ids the parent's delegation records
// name (the child link of each start tool's result, or its raw output), in
// log order, each once.
func delegatedChildren(events []session.Event) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] && session.ValidateID(id) == nil {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, ev := range events {
		// Most results name no child: a byte check spares decoding them.
		if ev.Type != session.TypeToolResult || !namesChild(ev.Data) {
			continue
		}
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err != nil {
			continue
		}
		if id, _, ok := delegation.ResultChild(d.Raw); ok {
			add(id)
			continue
		}
		if d.Display != nil {
			if link, ok := d.Display.Meta[delegation.MetaKey].(map[string]any); ok {
				id, _ := link["childSessionId"].(string)
				add(id)
			}
		}
	}
	return out
}

// parentEvents reads the parent's log: live, else stored. Nil when it
// cannot be read (the listing then rests on headers alone).
func (c *Catalog) parentEvents(ctx context.Context, co *corpus, parentID string) []session.Event {
	r := co.records[parentID]
	switch {
	case r == nil:
		return nil
	case r.live != nil:
		events, err := r.live.EventsView()
		if err != nil {
			return nil
		}
		return events
	case c.Persisted == nil:
		return nil
	}
	_, events, err := c.Persisted.Inspect(ctx, parentID)
	if err != nil {
		return nil
	}
	return events
}

// unaccounted returns a diagnostic row for each child the parent's log
// names that listed holds no row for, with the reason in Detail.
func (c *Catalog) unaccounted(ctx context.Context, co *corpus, parentID string, listed map[string]bool) []ListEntry {
	var out []ListEntry
	for _, id := range delegatedChildren(c.parentEvents(ctx, co, parentID)) {
		if listed[id] || id == parentID {
			continue
		}
		e := ListEntry{Kind: KindDiagnostic, ID: id}
		if r, ok := co.records[id]; ok {
			e.Reason = ReasonCorrupt
			switch p := r.header.ParentSession; {
			case p == id:
				e.Detail = "names itself as its parent"
			case p == "":
				e.Detail = "its log names no parent"
			case co.records[p] == nil:
				e.Detail = fmt.Sprintf("names a missing parent %s", p)
			case p != parentID:
				e.Detail = fmt.Sprintf("names another parent %s", p)
			default:
				e.Detail = "not a subagent session"
			}
		} else if pc, ok := c.Persisted.(ProblemChecker); ok {
			if problem, bad := pc.Problem(ctx, id); bad {
				e.Reason, e.Detail = ReasonUnavailable, problem
			} else {
				e.Reason, e.Detail = ReasonMissing, "its log does not exist"
			}
		} else {
			e.Reason, e.Detail = ReasonMissing, "its log is not listed"
		}
		out = append(out, e)
	}
	return out
}

// detailJSON renders the optional "detail" key of a diagnostic row.
func detailJSON(d string) string {
	if d == "" {
		return ""
	}
	b, _ := json.Marshal(d)
	return `,"detail":` + string(b)
}
