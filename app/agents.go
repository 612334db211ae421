package app

// This file exposes the durable subagent catalog to UIs and people: it
// wires the catalog into the ACP extension method acp.SubagentsListMethod,
// and defines the "agents" subcommand, which prints the same catalog from
// a data directory as a tree.

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// catalogRows is the subagent catalog seen through acp.SubagentCatalog.
type catalogRows struct{ cat *subagent.Catalog }

var _ acp.SubagentCatalog = catalogRows{}

func (c catalogRows) ChildRows(ctx context.Context, id string) ([]any, error) {
	entries, err := c.cat.ListChildren(ctx, id)
	return anyRows(entries), err
}

func (c catalogRows) DescendantRows(ctx context.Context, id string) ([]any, error) {
	entries, err := c.cat.ListDescendants(ctx, id)
	return anyRows(entries), err
}

func anyRows[T any](entries []T) []any {
	rows := make([]any, len(entries))
	for i, e := range entries {
		rows[i] = e
	}
	return rows
}

// WriteTree renders catalog rows indented by depth under the root id,
// then the root's starts waiting for a background slot. An isolated
// child's row is followed by its worktree as git sees it now (kept with
// its diffstat summary, or removed). Rows go out through one buffer as
// they are rendered: no tree-sized string is built. What the model or a
// log wrote (labels, damage, diagnostics) is escaped, so control, bidi
// and escape characters cannot make a row read differently from what it
// holds, nor drive the terminal the CLI prints to.
func WriteTree(ctx context.Context, w io.Writer, root string, entries []subagent.DescendantEntry, queued []subagent.QueuedStart) error {
	b := bufio.NewWriterSize(w, 64<<10)
	b.WriteString(root + "\n")
	if len(entries) == 0 {
		b.WriteString("  (no subagents)\n")
	}
	for _, e := range entries {
		for range e.Depth {
			b.WriteString("  ")
		}
		b.WriteString("└─ ")
		b.WriteString(e.ID)
		if e.Kind == subagent.KindDiagnostic {
			b.WriteString(" [diagnostic: ")
			b.WriteString(string(e.Reason))
			if e.Detail != "" {
				b.WriteString(": ")
				b.WriteString(workspace.EscapeTitle(e.Detail))
			}
			b.WriteString("]\n")
			continue
		}
		b.WriteString(" [")
		b.WriteString(string(e.Mode))
		b.WriteString(", ")
		b.WriteString(string(e.Activity))
		if e.HasChildren {
			b.WriteString(", has children")
		}
		b.WriteString("]")
		if e.Label != "" {
			b.WriteString(" — ")
			b.WriteString(workspace.EscapeTitle(e.Label))
		}
		if e.Damage != "" {
			b.WriteString(" — ")
			b.WriteString(workspace.EscapeTitle(e.Damage))
		}
		if e.Usage != nil {
			b.WriteString(" — used ")
			b.WriteString(e.Usage.String())
		}
		if note := e.External.Note(); note != "" {
			b.WriteString(" — ")
			b.WriteString(note)
		}
		if n := e.Nested; n != nil && n.State != "" {
			b.WriteString(" — announced by its parent's agent: ")
			b.WriteString(n.State)
		}
		if e.Question != nil {
			b.WriteString(" — ")
			b.WriteString(workspace.EscapeTitle(e.Question.String()))
		}
		b.WriteString("\n")
		if e.Worktree != nil {
			for range e.Depth + 1 {
				b.WriteString("  ")
			}
			b.WriteString(subagent.InspectWorktree(ctx, worktree.Git{}, *e.Worktree).Describe())
			b.WriteString("\n")
		}
	}
	for _, q := range queued {
		wait := "waiting for a background slot"
		if q.Resume {
			wait += " to resume"
		}
		fmt.Fprintf(b, "  └─ %s [queued, position %d: %s] — %s\n", q.ID, q.Position, wait, workspace.EscapeTitle(q.Label))
	}
	return b.Flush()
}
