package subagent

// This file is the merge-back of a worktree child's work: the parent (its
// merge_worktree and discard_worktree tools) or the person (/agents, the
// agents command) merges a settled child's branch into the branch checked
// out where the parent works, or drops it. Either way the worktree and
// its branch are removed once done; a conflict aborts the merge and
// leaves everything as it was.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// Codes of merge-back.
const (
	// CodeNoWorktree: the child has no worktree (not isolated, or not a
	// child of the caller).
	CodeNoWorktree Code = "NO_WORKTREE"
	// CodeWorktreeBusy: the child still runs (here or in another
	// process); its worktree is not merged or dropped under it.
	CodeWorktreeBusy Code = "WORKTREE_BUSY"
	// CodeMergeConflict: the merge conflicted and was aborted; the
	// parent's tree is as it was (MergeConflictFiles names the files).
	CodeMergeConflict Code = "MERGE_CONFLICT"
	// CodeNothingToMerge: the branch brings nothing new (or is gone).
	CodeNothingToMerge Code = "NOTHING_TO_MERGE"
	// CodeMergeFailed: git refused the merge (local changes in the way,
	// say) or failed; nothing was changed.
	CodeMergeFailed Code = "MERGE_FAILED"
)

// WorktreeRequest names a child whose worktree is merged or dropped.
type WorktreeRequest struct {
	ChildID string
	// ParentID, when set, must be the child's direct parent (the caller
	// of a tool); "" is the person, who may act on any child.
	ParentID string
	// Squash merges the branch as one new commit.
	Squash bool
}

// MergeOutcome is a merge that went through.
type MergeOutcome struct {
	WorktreeRecord
	Label string
	worktree.MergeResult
}

// MergeConflictFiles returns the files of a CodeMergeConflict error.
func MergeConflictFiles(err error) []string {
	files, _ := worktree.IsConflict(err)
	return files
}

// StoredWorktrees merges and drops the worktrees of stored children: what
// the person does from another process (the agents command), and what the
// runtime does once it checked the child does not run here (Service).
type StoredWorktrees struct {
	// Durable reads the children's logs; when it is a HeldChecker, a
	// child another process holds is left alone.
	Durable   SessionReader
	Worktrees Worktrees
	Log       *slog.Logger
}

// find returns the recorded worktree and label of a settled child,
// checking that req may act on it.
func (sw StoredWorktrees) find(ctx context.Context, req WorktreeRequest) (*WorktreeRecord, string, error) {
	if sw.Worktrees == nil {
		return nil, "", NewError(CodeIsolationFailed, "worktree support is not wired in this agent")
	}
	if sw.Durable == nil {
		return nil, "", NewError(CodePersistenceUnavailable, "merging a subagent's worktree needs session persistence")
	}
	id := req.ChildID
	if hc, ok := sw.Durable.(HeldChecker); ok {
		if held, err := hc.HeldElsewhere(id); err != nil || held {
			return nil, "", Errorf(CodeWorktreeBusy, "subagent %q is in use by another acp-agent process; its worktree is left alone", id)
		}
	}
	h, events, err := sw.Durable.Inspect(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", context.Cause(ctx)
		}
		return nil, "", wrapError(CodeNoWorktree, fmt.Sprintf("no subagent %q can be read: %v", id, err), err)
	}
	if req.ParentID != "" && h.ParentSession != req.ParentID {
		return nil, "", Errorf(CodeNoWorktree, "subagent %q is not one of your subagents", id)
	}
	own := events
	if h.SeedLength >= 0 && h.SeedLength <= len(events) {
		own = events[h.SeedLength:]
	}
	desc, err := FoldFirst(own)
	if err != nil || desc == nil || desc.Worktree == nil {
		return nil, "", Errorf(CodeNoWorktree, "subagent %q has no worktree (it was not started with isolation \"worktree\")", id)
	}
	if !worktree.Exists(desc.Worktree.tree()) && !sw.branchExists(ctx, desc.Worktree) {
		return nil, "", Errorf(CodeNoWorktree, "subagent %q has no worktree or branch left (merged, discarded, or removed as untouched)", id)
	}
	return desc.Worktree, desc.Label, nil
}

// branchExists reports whether rec's branch is there (its commits beyond
// the base are what is left when the folder is gone).
func (sw StoredWorktrees) branchExists(ctx context.Context, rec *WorktreeRecord) bool {
	ch, err := sw.Worktrees.Changes(ctx, rec.tree())
	return err == nil && ch.Changed
}

// Preview returns what merging req's child would bring into the parent's
// branch: the files with their text before and after (at most maxFiles;
// more counts the rest). Uncommitted work left in the worktree is
// committed on its branch first, so the preview is what Merge merges.
func (sw StoredWorktrees) Preview(ctx context.Context, req WorktreeRequest, maxFiles, maxBytes int) (rec *WorktreeRecord, files []worktree.FileDiff, more int, err error) {
	rec, label, err := sw.find(ctx, req)
	if err != nil {
		return nil, nil, 0, err
	}
	if _, _, err := sw.Worktrees.Commit(ctx, rec.tree(), Work{Label: label}.message(req.ChildID)); err != nil {
		return nil, nil, 0, mergeError(rec, err)
	}
	files, more, err = sw.Worktrees.Preview(ctx, rec.Repo, rec.tree(), maxFiles, maxBytes)
	if err != nil {
		return nil, nil, 0, mergeError(rec, err)
	}
	if len(files) == 0 {
		return nil, nil, 0, Errorf(CodeNothingToMerge, "branch %s brings nothing your branch does not have", rec.Branch)
	}
	return rec, files, more, nil
}

// Merge merges req's child's branch into the branch checked out in its
// repository (the parent's work tree), then removes the worktree and the
// branch. A conflict aborts the merge (CodeMergeConflict, the files
// named) and removes nothing.
func (sw StoredWorktrees) Merge(ctx context.Context, req WorktreeRequest) (MergeOutcome, error) {
	rec, label, err := sw.find(ctx, req)
	if err != nil {
		return MergeOutcome{}, err
	}
	if _, _, err := sw.Worktrees.Commit(ctx, rec.tree(), Work{Label: label}.message(req.ChildID)); err != nil {
		return MergeOutcome{}, mergeError(rec, err)
	}
	title := oneLine(label)
	if title == "" {
		title = "work of subagent " + req.ChildID
	}
	msg := fmt.Sprintf("Merge subagent work: %s\n\nFrom branch %s.\n\nSubagent-Id: %s\n", title, rec.Branch, req.ChildID)
	if req.Squash {
		msg = fmt.Sprintf("%s\n\nSquashed from branch %s.\n\nSubagent-Id: %s\n", title, rec.Branch, req.ChildID)
	}
	res, err := sw.Worktrees.Merge(ctx, rec.Repo, rec.tree(), req.Squash, msg)
	if err != nil {
		return MergeOutcome{}, mergeError(rec, err)
	}
	out := MergeOutcome{WorktreeRecord: *rec, Label: label, MergeResult: res}
	bg := context.WithoutCancel(ctx)
	head, _ := sw.Worktrees.Changes(bg, rec.tree())
	if err := sw.Worktrees.End(bg, rec.tree(), worktree.EndMerged, head.Head); err != nil && sw.Log != nil {
		sw.Log.Warn("subagent: recording a merged worktree failed", "worktree", rec.Path, "err", err)
	}
	if err := sw.Worktrees.Remove(bg, rec.tree()); err != nil && sw.Log != nil {
		sw.Log.Warn("subagent: removing a merged worktree failed", "worktree", rec.Path, "err", err)
	}
	return out, nil
}

// Discard drops req's child's work: its worktree and its branch are
// removed.
func (sw StoredWorktrees) Discard(ctx context.Context, req WorktreeRequest) (*WorktreeRecord, error) {
	rec, _, err := sw.find(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := sw.Worktrees.End(ctx, rec.tree(), worktree.EndDiscarded, ""); err != nil {
		return nil, wrapError(CodeMergeFailed, fmt.Sprintf("could not record the discard of %s: %v", rec.Branch, err), err)
	}
	if err := sw.Worktrees.Remove(ctx, rec.tree()); err != nil {
		return nil, wrapError(CodeMergeFailed, fmt.Sprintf("could not remove the worktree %s: %v", rec.Path, err), err)
	}
	return rec, nil
}

// stored is the runtime's StoredWorktrees, once the child lock is held
// and the child is known not to run in this process.
func (s *Service) stored(req WorktreeRequest) (StoredWorktrees, error) {
	id := req.ChildID
	if act, _ := s.cont.lookup(id); act != nil {
		return StoredWorktrees{}, Errorf(CodeWorktreeBusy, "subagent %q is still running in its worktree; wait for it to finish (or interrupt it) first", id)
	}
	if _, live := s.kids.sessions.Get(id); live {
		return StoredWorktrees{}, Errorf(CodeWorktreeBusy, "subagent %q is still running in its worktree; wait for it to finish first", id)
	}
	var durable SessionReader
	if s.durable != nil {
		durable = s.durable
	}
	return StoredWorktrees{Durable: durable, Worktrees: s.worktrees, Log: s.cont.log}, nil
}

// PreviewMerge is StoredWorktrees.Preview for a child that does not run.
func (s *Service) PreviewMerge(ctx context.Context, req WorktreeRequest, maxFiles, maxBytes int) (*WorktreeRecord, []worktree.FileDiff, int, error) {
	unlock := s.cont.lockChild(req.ChildID)
	defer unlock()
	sw, err := s.stored(req)
	if err != nil {
		return nil, nil, 0, err
	}
	return sw.Preview(ctx, req, maxFiles, maxBytes)
}

// MergeWorktree is StoredWorktrees.Merge for a child that does not run
// (held under its child lock, so no resume starts meanwhile).
func (s *Service) MergeWorktree(ctx context.Context, req WorktreeRequest) (MergeOutcome, error) {
	unlock := s.cont.lockChild(req.ChildID)
	defer unlock()
	sw, err := s.stored(req)
	if err != nil {
		return MergeOutcome{}, err
	}
	return sw.Merge(ctx, req)
}

// DiscardWorktree is StoredWorktrees.Discard for a child that does not
// run.
func (s *Service) DiscardWorktree(ctx context.Context, req WorktreeRequest) (*WorktreeRecord, error) {
	unlock := s.cont.lockChild(req.ChildID)
	defer unlock()
	sw, err := s.stored(req)
	if err != nil {
		return nil, err
	}
	return sw.Discard(ctx, req)
}

// FindWorktree returns the worktree of a settled child req may act on.
func (s *Service) FindWorktree(ctx context.Context, req WorktreeRequest) (*WorktreeRecord, error) {
	unlock := s.cont.lockChild(req.ChildID)
	defer unlock()
	sw, err := s.stored(req)
	if err != nil {
		return nil, err
	}
	rec, _, err := sw.find(ctx, req)
	return rec, err
}

// mergeError maps a git failure of merge-back to the runtime's codes.
func mergeError(rec *WorktreeRecord, err error) error {
	var we *worktree.Error
	if !errors.As(err, &we) {
		return err
	}
	switch we.Code {
	case worktree.CodeConflict:
		return wrapError(CodeMergeConflict, we.Message, err)
	case worktree.CodeNothingToMerge:
		return wrapError(CodeNothingToMerge, we.Message, err)
	}
	return wrapError(CodeMergeFailed, fmt.Sprintf("merging %s failed: %s", rec.Branch, strings.TrimSpace(we.Message)), err)
}
