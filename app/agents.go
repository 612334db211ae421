package app

// This file exposes the durable subagent catalog to UIs and people: the ACP
// extension method "_acp-agent/subagents/list" and the "agents" subcommand,
// which prints the same catalog from a data directory as a tree.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// SubagentsListMethod is the ACP extension method listing a session's
// subagents (both modes, with labels, activity and diagnostics).
const SubagentsListMethod = "_acp-agent/subagents/list"

// subagentsListParams are the extension's parameters.
type subagentsListParams struct {
	SessionID string `json:"sessionId"`
	// Scope is "children" (default) or "descendants".
	Scope string `json:"scope,omitempty"`
}

// subagentsListResult is the extension's answer: catalog rows in order;
// descendant rows carry parentId and depth.
type subagentsListResult struct {
	Entries []json.RawMessage `json:"entries"`
}

// invalidParams marks a bad extension request (-32602 through the acp
// server's error mapping).
func invalidParams(format string, args ...any) error {
	return &acp.Error{Code: acp.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// subagentsListExtension answers SubagentsListMethod from cat.
func subagentsListExtension(cat *subagent.Catalog) acp.ExtensionFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p subagentsListParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, invalidParams("subagents/list params: %v", err)
		}
		if err := session.ValidateID(p.SessionID); err != nil {
			return nil, invalidParams("subagents/list sessionId: %v", err)
		}
		rows, err := catalogRows(ctx, cat, p.SessionID, p.Scope)
		if err != nil {
			return nil, err
		}
		return subagentsListResult{Entries: rows}, nil
	}
}

// catalogRows lists the children or descendants of id as JSON rows.
func catalogRows(ctx context.Context, cat *subagent.Catalog, id, scope string) ([]json.RawMessage, error) {
	var rows []any
	switch scope {
	case "", "children":
		entries, err := cat.ListChildren(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			rows = append(rows, e)
		}
	case "descendants":
		entries, err := cat.ListDescendants(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			rows = append(rows, e)
		}
	default:
		return nil, invalidParams(`subagents/list scope must be "children" or "descendants", got %q`, scope)
	}
	out := make([]json.RawMessage, 0, len(rows))
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func agentsCommand() Command {
	return Command{
		Name:    "agents",
		Usage:   "agents [--descendants] SESSION_ID",
		Summary: "print the subagents of a stored session as a tree (read-only)",
		Run:     runAgents,
	}
}

// runAgents prints the catalog of one session from disk. It opens storage
// read-only in effect: it scans the catalog index, reads cache rows and
// inspects logs, and never locks, repairs or resumes a session (the only
// file it may write is the derived index, when it had to rebuild rows).
func runAgents(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("acp-agent agents", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	env.Flags.register(fs)
	descendants := fs.Bool("descendants", false, "walk the whole tree below the session, not only its direct children")
	if err := fs.Parse(reorderFlags(args, "descendants")); err != nil {
		return parseError(err)
	}
	if fs.NArg() != 1 {
		return usageErrorf("agents: want exactly one SESSION_ID, got %d arguments", fs.NArg())
	}
	id := fs.Arg(0)
	if err := session.ValidateID(id); err != nil {
		return usageErrorf("agents: %v", err)
	}
	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		return err
	}
	// The cache lives in the data directory, next to sessions/.
	cache, err := projcache.Open(filepath.Dir(st.Dir()), reg)
	if err != nil {
		return err
	}
	cat := &subagent.Catalog{
		Sessions:    session.NewStore(nil),
		Projections: reg,
		Persisted:   durableStore{st},
		Cache:       cache,
		Index:       catalogIndex{cache.Index(st.Dir(), headerReader(st))},
	}
	if *descendants {
		entries, err := cat.ListDescendants(ctx, id)
		if err != nil {
			return err
		}
		return writeTree(env.Stdout, id, entries)
	}
	entries, err := cat.ListChildren(ctx, id)
	if err != nil {
		return err
	}
	tree := make([]subagent.DescendantEntry, len(entries))
	for i, e := range entries {
		tree[i] = subagent.DescendantEntry{ListEntry: e, ParentID: id, Depth: 1}
	}
	return writeTree(env.Stdout, id, tree)
}

// reorderFlags lets flags follow the positional argument
// ("agents ID --descendants"), which the flag package would not parse.
// Flags not named in boolFlags take the next argument as their value.
func reorderFlags(args []string, boolFlags ...string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !slices.Contains(boolFlags, name) && i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, rest...)
}

// writeTree renders catalog rows indented by depth under the root id.
func writeTree(w io.Writer, root string, entries []subagent.DescendantEntry) error {
	var b strings.Builder
	b.WriteString(root + "\n")
	if len(entries) == 0 {
		b.WriteString("  (no subagents)\n")
	}
	for _, e := range entries {
		b.WriteString(strings.Repeat("  ", e.Depth))
		b.WriteString("└─ ")
		b.WriteString(e.ID)
		if e.Kind == subagent.KindDiagnostic {
			fmt.Fprintf(&b, " [diagnostic: %s]\n", e.Reason)
			continue
		}
		fmt.Fprintf(&b, " [%s, %s", e.Mode, e.Activity)
		if e.HasChildren {
			b.WriteString(", has children")
		}
		b.WriteString("]")
		if e.Label != "" {
			b.WriteString(" — " + e.Label)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
