package app

// This file is the person's merge-back of worktree children: "/agents
// merge ID", "/agents discard ID" in a session, and the agents command's
// merge and discard from a data directory (app/cli). The person's own
// command is the decision: nothing more is asked.

import (
	"context"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// MergeBack runs "merge [--squash] ID" or "discard ID" (args) against the
// stored children of st, outside any running agent, and returns what was
// done. A child another process holds is refused (WORKTREE_BUSY).
func MergeBack(ctx context.Context, st *persistence.Store, args []string) (string, error) {
	sw := subagent.StoredWorktrees{Durable: durableStore{st}, Worktrees: worktree.Git{}}
	return mergeBack(ctx, args, sw.Merge, sw.Discard)
}

// ParseMergeBack reads "merge [--squash] ID" or "discard ID"; ok is false
// when args are not such a command.
func ParseMergeBack(args []string) (verb string, req subagent.WorktreeRequest, ok bool, err error) {
	if len(args) == 0 || (args[0] != "merge" && args[0] != "discard") {
		return "", req, false, nil
	}
	verb = args[0]
	var ids []string
	for _, a := range args[1:] {
		switch {
		case a == "--squash" && verb == "merge":
			req.Squash = true
		case strings.HasPrefix(a, "-"):
			return verb, req, true, fmt.Errorf("%s: unknown option %s", verb, a)
		default:
			ids = append(ids, a)
		}
	}
	if len(ids) != 1 {
		return verb, req, true, fmt.Errorf("%s: want exactly one subagent ID, got %d", verb, len(ids))
	}
	req.ChildID = ids[0]
	return verb, req, true, nil
}

// mergeBack parses args and runs merge or discard.
func mergeBack(ctx context.Context, args []string, merge func(context.Context, subagent.WorktreeRequest) (subagent.MergeOutcome, error), discard func(context.Context, subagent.WorktreeRequest) (*subagent.WorktreeRecord, error)) (string, error) {
	verb, req, ok, err := ParseMergeBack(args)
	if !ok {
		return "", fmt.Errorf("unknown argument %q: use /agents to list the subagents, /agents merge [--squash] ID or /agents discard ID", strings.Join(args, " "))
	}
	if err != nil {
		return "", err
	}
	if verb == "merge" {
		out, err := merge(ctx, req)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Subagent %s: %s", req.ChildID, subagent.MergeSummary(out)), nil
	}
	rec, err := discard(ctx, req)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Subagent %s: its work was discarded; worktree %s and branch %s were removed.", req.ChildID, rec.Path, rec.Branch), nil
}

// agentsCommand runs /agents: the tree, or with "merge ID" / "discard
// ID" the person's merge-back of one child.
func (a *App) agentsCommand(ctx context.Context, sessionID, input string) (string, error) {
	if args := strings.Fields(input); len(args) > 0 {
		return mergeBack(ctx, args, a.Subagents.MergeWorktree, a.Subagents.DiscardWorktree)
	}
	tree, err := agentsText(ctx, a.Catalog, sessionID, a.Subagents.Queued(sessionID))
	if err != nil {
		return "", err
	}
	return a.definitionsText(sessionID) + tree, nil
}
