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
	"slices"
	"sync"

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

// childNames collects the child ids a parent's delegation records name
// (the child link of each start tool's result, or its raw output), in log
// order, each once.
type childNames struct {
	ids  []string
	seen map[string]bool
}

func (c *childNames) add(id string) {
	if id != "" && !c.seen[id] && session.ValidateID(id) == nil {
		if c.seen == nil {
			c.seen = map[string]bool{}
		}
		c.seen[id] = true
		c.ids = append(c.ids, id)
	}
}

// fold adds the children that events name.
func (c *childNames) fold(events []session.Event) {
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
			c.add(id)
			continue
		}
		if d.Display != nil {
			if link, ok := d.Display.Meta[delegation.MetaKey].(map[string]any); ok {
				id, _ := link["childSessionId"].(string)
				c.add(id)
			}
		}
	}
}

// delegatedChildren returns the child ids the parent's delegation records
// name, in log order, each once.
func delegatedChildren(events []session.Event) []string {
	var c childNames
	c.fold(events)
	return c.ids
}

// delegations is a Catalog's incremental index of the children each live
// parent's log names: a listing folds only the events appended since the
// previous one, so once warm it reads no storage (a live log's older part
// is evicted from memory). Derived and rebuildable: an entry starts over
// for a new live session under the same id. Safe for concurrent use.
type delegations struct {
	mu   sync.Mutex
	byID map[string]*liveNames
}

// liveNames is the index entry of one live parent.
type liveNames struct {
	sess  *session.Session // the session folded
	next  int              // seq of the first event not folded
	names childNames
}

// of returns the children the live parent sess names so far. Entries of
// sessions no longer live in st are dropped.
func (d *delegations) of(st *session.Store, sess *session.Session) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]*liveNames{}
	}
	for id, n := range d.byID {
		if cur, ok := st.Get(id); !ok || cur != n.sess {
			delete(d.byID, id)
		}
	}
	n := d.byID[sess.ID()]
	if n == nil || n.sess != sess {
		n = &liveNames{sess: sess}
		d.byID[sess.ID()] = n
	}
	events, err := sess.EventsFrom(n.next)
	if err != nil {
		return nil, err
	}
	n.names.fold(events)
	if len(events) > 0 {
		n.next = int(events[len(events)-1].Seq) + 1
	}
	return slices.Clone(n.names.ids), nil
}

// parentChildren returns the children the parent's log names: live from
// the incremental index, else from the stored log. Nil when it cannot be
// read (the listing then rests on headers alone).
func (c *Catalog) parentChildren(ctx context.Context, co *corpus, parentID string) []string {
	r := co.records[parentID]
	switch {
	case r == nil:
		return nil
	case r.live != nil:
		ids, err := c.delegated.of(c.Sessions, r.live)
		if err != nil {
			return nil
		}
		return ids
	case c.Persisted == nil:
		return nil
	}
	_, events, err := c.Persisted.Inspect(ctx, parentID)
	if err != nil {
		return nil
	}
	return delegatedChildren(events)
}

// unaccounted returns a diagnostic row for each child the parent's log
// names that listed holds no row for, with the reason in Detail.
func (c *Catalog) unaccounted(ctx context.Context, co *corpus, parentID string, listed map[string]bool) []ListEntry {
	var out []ListEntry
	for _, id := range c.parentChildren(ctx, co, parentID) {
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
