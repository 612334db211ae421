package subagent

// This file is the worktree lease: the one owner of a child's worktree
// from its making (or its restoring on a cold resume) until the child's
// record of it is durable and the child runs, or until the start ends
// without a child. Every path that ends a start or a resume before the
// child runs (a rollback, an agent that cannot be built, a failed cold
// resume, a cancel) ends its worktree through abandon, the same way; a
// process killed before the child's record is durable leaves the lease's
// intent in the journal (worktree.Intents), and the next process removes
// the worktree (Runtime.SweepWorktreeIntents). Once the child runs, its
// durable record is the authority, and settlement (settleTree) ends the
// worktree.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// worktreeLease owns one child's worktree until the child runs.
type worktreeLease struct {
	c   *Continuations
	id  string
	rec *WorktreeRecord
	// intent is the journal entry, open until the record is durable.
	intent *worktree.Open
	// fresh: made by this lease (a start); else restored (a cold resume)
	// when restored, or found present (nothing to undo).
	fresh, restored bool
	once            sync.Once
}

// newLease plans the worktree of a new child of parent, journals it, and
// makes it; it returns the lease and the child's cwd in the worktree: the
// parent's cwd's place in the repository, so a parent in <repo>/sub has a
// child in <worktree>/sub. On failure nothing is left.
func (s *Service) newLease(ctx context.Context, parent *agent.Agent, childID string) (*worktreeLease, string, error) {
	if s.worktrees == nil {
		return nil, "", NewError(CodeIsolationFailed, "worktree isolation is not available in this agent (no git support wired)")
	}
	cwd := parent.Session().Header().Cwd
	fail := func(err error) (*worktreeLease, string, error) {
		if ctx.Err() != nil {
			return nil, "", context.Cause(ctx)
		}
		var we *worktree.Error
		if errors.As(err, &we) && we.Code == worktree.CodeNotARepository {
			return nil, "", wrapError(CodeIsolationFailed, fmt.Sprintf("isolation %q needs a git repository, and %s is not in one", IsolationWorktree, cwd), err)
		}
		return nil, "", wrapError(CodeIsolationFailed, fmt.Sprintf("could not create the worktree of subagent %q: %v", childID, err), err)
	}
	wt, err := s.worktrees.Plan(ctx, cwd, childID)
	if err != nil {
		return fail(err)
	}
	in := s.cont.intents
	open, err := in.Begin(childID, wt)
	if err != nil {
		return fail(err)
	}
	in.Step(worktree.FaultIntent)
	if err := s.worktrees.Add(ctx, wt); err != nil {
		open.End() // Add removed what git made
		return fail(err)
	}
	in.Step(worktree.FaultAdded)
	l := &worktreeLease{c: s.cont, id: childID, intent: open, fresh: true,
		rec: &WorktreeRecord{Repo: wt.Repo, Path: wt.Path, Branch: wt.Branch, Base: wt.Base}}
	childCwd := wt.Path
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		repo, _ := filepath.EvalSymlinks(wt.Repo)
		if rel, err := filepath.Rel(repo, real); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			childCwd = filepath.Join(wt.Path, rel)
		}
	}
	return l, childCwd, nil
}

// restoreLease brings back the recorded worktree of a child being resumed
// cold (its untouched worktree was removed at settlement).
func (s *Service) restoreLease(ctx context.Context, childID string, rec *WorktreeRecord) (*worktreeLease, error) {
	if s.worktrees == nil {
		return nil, NewError(CodeIsolationFailed, fmt.Sprintf("subagent %q works in a worktree, and worktree support is not wired", childID))
	}
	l := &worktreeLease{c: s.cont, id: childID, rec: rec, restored: !worktree.Exists(rec.tree())}
	if err := s.worktrees.Restore(ctx, rec.tree()); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, wrapError(CodeIsolationFailed, fmt.Sprintf("subagent %q: could not restore its worktree %s: %v", childID, rec.Path, err), err)
	}
	return l, nil
}

// recorded is called once the child's record of the worktree is durable
// (its session created with the descriptor naming it): the intent ends,
// as the record now says where the child works.
func (l *worktreeLease) recorded() {
	if l == nil || l.intent == nil {
		return
	}
	l.c.intents.Step(worktree.FaultRecorded)
	l.intent.End()
	l.intent = nil
}

// abandon ends the worktree of a start or resume that ended before the
// child ran: one this lease made is removed with its branch (and its
// intent ends); one it restored is settled by the usual rule (removed
// again when untouched: its branch may hold the child's commits); one it
// found present is left. Safe to call more than once and on nil.
func (l *worktreeLease) abandon() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		ctx := context.Background()
		switch {
		case l.fresh:
			if err := l.c.worktrees.Remove(ctx, l.rec.tree()); err != nil {
				// The intent stays (when there is one): the next process
				// tries again.
				l.c.log.Warn("subagent: removing the worktree of a failed start failed", "worktree", l.rec.Path, "err", err)
				return
			}
			if l.intent != nil {
				l.intent.End()
				l.intent = nil
			}
		case l.restored:
			l.c.settleTree(ctx, l.id, l.rec, nil)
		}
	})
}

// record returns the lease's worktree record (nil on a nil lease).
func (l *worktreeLease) record() *WorktreeRecord {
	if l == nil {
		return nil
	}
	return l.rec
}

// SweepWorktreeIntents finishes or removes the worktrees a killed process
// was making (the intent journal): one whose child recorded it in its
// durable descriptor is the child's (every listing shows it), any other is
// removed with its branch. Run once at start, before any session loads.
func (r *Runtime) SweepWorktreeIntents(ctx context.Context) error {
	g, ok := r.Service.worktrees.(worktree.Git)
	if !ok || r.cont.intents.Dir == "" {
		return nil
	}
	removed, err := r.cont.intents.Sweep(ctx, g, func(name string, wt worktree.Worktree) bool {
		return r.recordedWorktree(ctx, name, wt)
	})
	for _, it := range removed {
		r.cont.log.Info("subagent: removed the worktree a stopped agent was making", "child", it.Name, "worktree", it.Worktree.Path, "branch", it.Worktree.Branch)
	}
	return err
}

// recordedWorktree reports whether child id's durable descriptor records
// the worktree wt.
func (r *Runtime) recordedWorktree(ctx context.Context, id string, wt worktree.Worktree) bool {
	if r.Service.durable == nil {
		return false
	}
	h, events, err := r.Service.durable.Inspect(ctx, id)
	if err != nil {
		return false
	}
	own := events
	if h.SeedLength >= 0 && h.SeedLength <= len(events) {
		own = events[h.SeedLength:]
	}
	// The descriptor follows the driver's prefix (a fork's is its
	// parent's history, which may hold the parent's own descriptor).
	desc, err := FoldFirst(own)
	if err != nil || desc == nil || desc.Worktree == nil {
		return false
	}
	return filepath.Clean(desc.Worktree.Path) == filepath.Clean(wt.Path) && desc.Worktree.Branch == wt.Branch
}
