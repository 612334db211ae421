package app

// This file exposes the durable subagent catalog to UIs and people: it
// wires the catalog into the ACP extension method acp.SubagentsListMethod,
// and defines the "agents" subcommand, which prints the same catalog from
// a data directory as a tree.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
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

func agentsCommand() Command {
	var descendants, definitions bool
	return Command{
		Name:    "agents",
		Usage:   "agents [--data-dir DIR] [--descendants] SESSION_ID\nagents --definitions [DIR]",
		Summary: "print the subagents of a stored session as a tree, or the agent definitions (read-only)",
		Description: `Prints the session's subagents from the durable catalog: id, mode,
activity and label of each, as the /agents slash command and the
_acp-agent/subagents/list extension show them. Nothing is locked or resumed.

With --definitions it prints the agent definitions a session in DIR (default
the current directory) would offer: name, source file, model, mode and
isolation of each, then every file that was skipped or not fully mapped,
with its line and why.`,
		Examples: []string{
			"acp-agent agents 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent agents --descendants 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent agents --definitions",
		},
		Common: []string{CommonDataDir},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&descendants, "descendants", false, "walk the whole tree below the session, not only its direct children")
			fs.BoolVar(&definitions, "definitions", false, "print the agent definitions of DIR (default the current directory) instead (env "+EnvDefinitions+"=1)")
		},
		Run: func(ctx context.Context, env *Env, args []string) error {
			if definitions || env.Getenv(EnvDefinitions) == "1" {
				return runDefinitions(env, args)
			}
			return runAgents(ctx, env, descendants, args)
		},
	}
}

// runDefinitions prints the agent definitions of one directory.
func runDefinitions(env *Env, args []string) error {
	if len(args) > 1 {
		return usageErrorf("agents --definitions: want at most one directory, got %d arguments", len(args))
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	cwd, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return usageErrorf("agents --definitions: %s is not a directory", dir)
	}
	set := agentdef.Load(definitionOptions(cwd, PromptConfig{}, env.Getenv))
	fmt.Fprintf(env.Stdout, "Agent definitions of %s (%d):\n", cwd, set.Len())
	return writeDefinitions(env.Stdout, set, cwd)
}

// runAgents prints the catalog of one session from disk. It opens storage
// read-only in effect: it scans the catalog index, reads cache rows and
// inspects logs, and never locks, repairs or resumes a session (the only
// file it may write is the derived index, when it had to rebuild rows).
func runAgents(ctx context.Context, env *Env, descendants bool, args []string) error {
	id, st, err := openOneSession(env, "agents", args)
	if err != nil {
		return err
	}
	defer st.Close()
	// An unknown id is an error, not an empty tree.
	if _, err := st.Header(ctx, id); err != nil {
		return sessionError(id, err)
	}
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		return err
	}
	// A repaired child's row says so (the cache's values hold it).
	if _, err := reg.Register(projection.Repaired()); err != nil {
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
	if descendants {
		entries, err := cat.ListDescendants(ctx, id)
		if err != nil {
			return err
		}
		return writeTree(ctx, env.Stdout, id, entries, nil)
	}
	entries, err := cat.ListChildren(ctx, id)
	if err != nil {
		return err
	}
	tree := make([]subagent.DescendantEntry, len(entries))
	for i, e := range entries {
		tree[i] = subagent.DescendantEntry{ListEntry: e, ParentID: id, Depth: 1}
	}
	return writeTree(ctx, env.Stdout, id, tree, nil)
}

// writeTree renders catalog rows indented by depth under the root id,
// then the root's starts waiting for a background slot. An isolated
// child's row is followed by its worktree as git sees it now (kept with
// its diffstat summary, or removed). Rows go out through one buffer as
// they are rendered: no tree-sized string is built.
func writeTree(ctx context.Context, w io.Writer, root string, entries []subagent.DescendantEntry, queued []subagent.QueuedStart) error {
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
				b.WriteString(e.Detail)
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
			b.WriteString(e.Label)
		}
		if e.Damage != "" {
			b.WriteString(" — ")
			b.WriteString(e.Damage)
		}
		if e.Usage != nil {
			b.WriteString(" — used ")
			b.WriteString(e.Usage.String())
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
		fmt.Fprintf(b, "  └─ %s [queued, position %d: waiting for a background slot] — %s\n", q.ID, q.Position, q.Label)
	}
	return b.Flush()
}
