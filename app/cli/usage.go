package cli

// This file renders the token and cost accounting of "sessions show": the
// session's own model responses, and its whole subagent tree (every stored
// session whose parent chain leads to it), folded from the logs by package
// budget. Costs are list prices of known models; a session whose models
// have no known price shows no cost.

import (
	"context"
	"fmt"
	"io"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
)

// usageLine renders one tally.
func usageLine(t budget.Tally) string {
	s := fmt.Sprintf("%d model responses (%d with counts): %d input tokens", t.Calls, t.Responses, t.Input)
	if t.Cached > 0 {
		s += fmt.Sprintf(" (%d cached)", t.Cached)
	}
	if t.CacheWrite > 0 {
		s += fmt.Sprintf(" (%d written to cache)", t.CacheWrite)
	}
	s += fmt.Sprintf(", %d output tokens", t.Output)
	if t.Priced() > 0 {
		s += fmt.Sprintf(", cost $%.4f", t.Cost)
		if t.Unpriced > 0 {
			s += fmt.Sprintf(" (%d responses without a known price)", t.Unpriced)
		}
	} else if t.Responses > 0 {
		s += ", cost unknown (no known price)"
	}
	if t.Compactions > 0 {
		s += fmt.Sprintf("; %d compaction(s)", t.Compactions)
	}
	return s
}

// add sums u into t (the tree total).
func addTally(t *budget.Tally, u budget.Tally) {
	t.Usage.Add(u.Usage)
	t.Calls += u.Calls
	t.Compactions += u.Compactions
}

// writeUsage writes the usage of session id (whose events are given) and
// of its subagent tree.
func writeUsage(ctx context.Context, w io.Writer, st *persistence.Store, id string, events []session.Event) error {
	own := budget.Fold(events)
	fmt.Fprintf(w, "\nusage\n  this session: %s\n", usageLine(own))
	entries, err := st.List(ctx)
	if err != nil {
		return err
	}
	parent := make(map[string]string, len(entries))
	for _, e := range entries {
		parent[e.Header.ID] = e.Header.ParentSession
	}
	below := func(x string) bool {
		for seen := 0; x != "" && seen <= len(parent); seen++ {
			p := parent[x]
			if p == id {
				return true
			}
			x = p
		}
		return false
	}
	tree, n := own, 0
	for _, e := range entries {
		if !below(e.Header.ID) {
			continue
		}
		snap, err := st.Inspect(ctx, e.Header.ID)
		if err != nil {
			fmt.Fprintf(w, "  (subagent %s not counted: %v)\n", e.Header.ID, err)
			continue
		}
		n++
		// A fork's inherited seed was counted in its parent already.
		evs := snap.Events
		if k := min(max(snap.Header.SeedLength, 0), len(evs)); k > 0 {
			evs = evs[k:]
		}
		addTally(&tree, budget.Fold(evs))
	}
	if n > 0 {
		fmt.Fprintf(w, "  with its %d subagent(s): %s\n", n, usageLine(tree))
	}
	return nil
}
