package subagent

// This file settles the worktrees a killed process left: a foreground
// (one-shot) child isolated in a worktree is settled when its call
// returns (Delegation.foreground, SettleWorktree). When the agent dies
// while the call runs (kill -9, power loss), nothing settles it; the
// child is never continued either. So when its root session is next
// loaded, each such worktree is settled by the same rule, and the root's
// log records what was done (delegation.TypeWorktreeSettled), which is
// also what makes a second load do nothing more.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// HeldChecker is implemented by a Durable that can tell whether another
// process holds a session for writing (its agent is alive there).
type HeldChecker interface {
	HeldElsewhere(id string) (bool, error)
}

// SettleLeftWorktrees settles the worktrees of the one-shot children below
// the root session root (events: its log as just loaded) whose call never
// returned: an untouched worktree is removed with its branch, a changed
// one is kept. It returns one record per settled worktree, for the caller
// to append to the root's log (and show); nil when there is nothing to do.
//
// A child counts as settled when its parent's log has the delegation's
// result linked to it (the call returned, and settled its worktree before
// that) or the root's log has its record. A child whose session, or whose
// parent's session, is live in this process or held by another one is
// left alone (its agent may still be using the worktree); so is every
// child when the root's directory holds no subagent worktrees at all
// (the common load costs one stat per ancestor directory).
func (r *Runtime) SettleLeftWorktrees(ctx context.Context, root session.Header, events []session.Event) []delegation.WorktreeSettled {
	if r.Service.worktrees == nil || r.Listing.catalog == nil || !worktreesNear(root.Cwd) {
		return nil
	}
	rows, err := r.Listing.catalog.ListDescendants(ctx, root.ID)
	if err != nil {
		r.cont.log.Warn("subagent: list the children of a loaded session for left worktrees", "session_id", root.ID, "err", err)
		return nil
	}
	logs := map[string]map[string]bool{root.ID: settledIn(events)}
	recorded := logs[root.ID]
	var out []delegation.WorktreeSettled
	for _, row := range rows {
		if row.Kind != KindChild || row.Mode != ModeOneShot || row.Worktree == nil || recorded[row.ID] {
			continue
		}
		settled, ok := logs[row.ParentID]
		if !ok {
			settled = r.settledInStored(ctx, row.ParentID)
			logs[row.ParentID] = settled
		}
		if settled == nil || settled[row.ID] {
			continue // the parent's log is unreadable (left alone), or the call returned
		}
		if r.inUse(row.ID) || (row.ParentID != root.ID && r.inUse(row.ParentID)) {
			continue
		}
		o := r.cont.settleTree(ctx, row.ID, row.Worktree, &Work{Label: row.Label, Stop: "interrupted"})
		if ctx.Err() != nil {
			// A load cancelled mid-way: what git could not finish is not
			// recorded, so the next load settles it.
			break
		}
		if o == nil {
			continue
		}
		out = append(out, leftRecord(row.ID, o))
	}
	return out
}

// settledInStored reads parent's stored log for settled children (nil
// when it cannot be read: its children are then left alone).
func (r *Runtime) settledInStored(ctx context.Context, parentID string) map[string]bool {
	if r.Service.durable == nil {
		return nil
	}
	_, events, err := r.Service.durable.Inspect(ctx, parentID)
	if err != nil {
		r.cont.log.Warn("subagent: read a child's parent for left worktrees", "session_id", parentID, "err", err)
		return nil
	}
	return settledIn(events)
}

// inUse reports whether session id may still be driven by an agent: live
// in this process, held for writing by another one, or unknown.
func (r *Runtime) inUse(id string) bool {
	if _, live := r.Service.kids.sessions.Get(id); live {
		return true
	}
	hc, ok := r.Service.durable.(HeldChecker)
	if !ok {
		return false
	}
	held, err := hc.HeldElsewhere(id)
	if err != nil {
		r.cont.log.Warn("subagent: tell whether a child is held elsewhere; its worktree is left alone", "session_id", id, "err", err)
		return true
	}
	return held
}

// settledIn returns the children whose worktree events settled: those
// whose delegation result is linked to them (the call returned) and those
// a TypeWorktreeSettled record names.
func settledIn(events []session.Event) map[string]bool {
	out := map[string]bool{}
	for _, ev := range events {
		switch ev.Type {
		case delegation.TypeWorktreeSettled:
			if d, err := session.DecodeData[delegation.WorktreeSettled](ev); err == nil && d.ChildSessionID != "" {
				out[d.ChildSessionID] = true
			}
		case session.TypeToolResult:
			d, err := session.DecodeData[session.ToolResultData](ev)
			if err != nil || d.Display == nil {
				continue
			}
			if id, ok := delegation.LinkedChild(d.Display.Meta); ok {
				out[id] = true
			}
		}
	}
	return out
}

// worktreesNear reports whether cwd or one of its ancestors holds a
// subagent worktrees folder (a child's worktree lies in the repository
// its parent's cwd is in, nested ones inside their parent's worktree).
func worktreesNear(cwd string) bool {
	if cwd == "" {
		return false
	}
	for dir := filepath.Clean(cwd); ; {
		if _, err := os.Lstat(filepath.Join(dir, ".acp-agent", "worktrees")); err == nil {
			return true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}

// leftRecord is the record (and the person's notice) of a worktree
// settled after its child's call was cut short.
func leftRecord(childID string, o *WorktreeOutcome) delegation.WorktreeSettled {
	rec := delegation.WorktreeSettled{ChildSessionID: childID, Path: o.Path, Branch: o.Branch, Kept: o.Kept}
	if o.Err != nil {
		rec.Error = o.Err.Error()
	} else if o.Kept {
		rec.Summary, rec.Diffstat = changeSummary(o.Changes), o.Changes.Stat
	}
	what := worktreeNotice(o).Text
	if _, err := os.Lstat(o.Path); err != nil && o.Kept && o.Err == nil {
		// Its folder was deleted; the commits on its branch are what is left.
		what = fmt.Sprintf("Its worktree folder %s is gone; its branch %s is kept: %s.", o.Path, o.Branch, changeSummary(o.Changes))
		if o.Changes.Stat != "" {
			what += "\n" + o.Changes.Stat
		}
		what += "\nReview, merge or delete the branch when you are done with it."
	}
	rec.Message = fmt.Sprintf("Subagent %s did not return: the agent stopped while it ran. %s", childID, what)
	return rec
}
