package subagent

// This file is worktree isolation of children, continuable and one-shot:
// a child started with IsolationWorktree works in its own git worktree of
// the parent's repository (package subagent/worktree), recorded in its
// descriptor before its first turn, with the worktree as its cwd and so as
// its workspace boundary. When it settles (a one-shot child: when its run
// is disposed, SettleWorktree), an untouched worktree is removed and one
// with changes is kept and reported.

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// Isolation is where a child works.
type Isolation string

// Isolations.
const (
	// IsolationNone: the child works in its parent's tree (the default).
	IsolationNone Isolation = "none"
	// IsolationWorktree: the child works in a git worktree of its own.
	IsolationWorktree Isolation = "worktree"
)

// CodeIsolationFailed: a child's isolation could not be set up (not a git
// repository, git failed, no worktree support wired); nothing was started.
const CodeIsolationFailed Code = "ISOLATION_FAILED"

// ParseIsolation reads an isolation name; "" is IsolationNone.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case "", IsolationNone:
		return IsolationNone, nil
	case IsolationWorktree:
		return IsolationWorktree, nil
	}
	return "", Errorf(CodeInvalidRequest, `isolation must be "none" or "worktree", got %q`, s)
}

// WorktreeRecord is a child's worktree as its descriptor records it.
type WorktreeRecord struct {
	// Repo is the root of the parent's repository.
	Repo string `json:"repo"`
	// Path is the worktree's folder (the child's cwd is in it).
	Path string `json:"path"`
	// Branch is the worktree's branch.
	Branch string `json:"branch"`
	// Base is the commit the branch started from.
	Base string `json:"base"`
}

func (r WorktreeRecord) tree() worktree.Worktree {
	return worktree.Worktree{Repo: r.Repo, Path: r.Path, Branch: r.Branch, Base: r.Base}
}

// Worktrees is what isolation needs from git (worktree.Git implements it).
type Worktrees interface {
	Plan(ctx context.Context, dir, name string) (worktree.Worktree, error)
	Add(ctx context.Context, wt worktree.Worktree) error
	Restore(ctx context.Context, wt worktree.Worktree) error
	Changes(ctx context.Context, wt worktree.Worktree) (worktree.Changes, error)
	Remove(ctx context.Context, wt worktree.Worktree) error
	Commit(ctx context.Context, wt worktree.Worktree, message string) (head string, committed bool, err error)
	Preview(ctx context.Context, into string, wt worktree.Worktree, maxFiles, maxBytes int) ([]worktree.FileDiff, int, error)
	Merge(ctx context.Context, into string, wt worktree.Worktree, squash bool, message string) (worktree.MergeResult, error)
	End(ctx context.Context, wt worktree.Worktree, how, commit string) error
	Ended(ctx context.Context, wt worktree.Worktree) (how, commit string)
}

var _ Worktrees = worktree.Git{}

// WorktreeState is what a listing shows of a child's worktree.
type WorktreeState struct {
	WorktreeRecord
	// Present is false once the worktree was removed.
	Present bool
	// Changes is what the worktree holds (when Present).
	Changes worktree.Changes
	// Err is set when git could not tell.
	Err error
	// Ended is how its work ended once removed: worktree.EndMerged (at
	// EndCommit) or worktree.EndDiscarded; "" when it was removed as
	// untouched.
	Ended, EndCommit string
}

// InspectWorktree reports the current state of a recorded worktree: git
// is the authority on what it holds.
func InspectWorktree(ctx context.Context, wts Worktrees, rec WorktreeRecord) WorktreeState {
	st := WorktreeState{WorktreeRecord: rec}
	if _, err := os.Lstat(rec.Path); err != nil {
		if wts != nil {
			st.Ended, st.EndCommit = wts.Ended(ctx, rec.tree())
		}
		return st
	}
	st.Present = true
	if wts != nil {
		st.Changes, st.Err = wts.Changes(ctx, rec.tree())
	}
	return st
}

// Describe renders the state on one line, for listings.
func (st WorktreeState) Describe() string {
	switch {
	case !st.Present && st.Ended == worktree.EndMerged:
		return fmt.Sprintf("work merged (commit %s); worktree removed with its branch %s", shortHash(st.EndCommit), st.Branch)
	case !st.Present && st.Ended == worktree.EndDiscarded:
		return fmt.Sprintf("work discarded; worktree removed with its branch %s", st.Branch)
	case !st.Present:
		return fmt.Sprintf("worktree removed with its branch %s: it made no changes", st.Branch)
	case st.Err != nil:
		return fmt.Sprintf("worktree %s on branch %s (changes unknown: %v)", st.Path, st.Branch, st.Err)
	case !st.Changes.Changed:
		return fmt.Sprintf("worktree %s on branch %s, no changes", st.Path, st.Branch)
	}
	if st.Changes.Head != "" {
		return fmt.Sprintf("worktree %s on branch %s (commit %s): %s", st.Path, st.Branch, shortHash(st.Changes.Head), changeSummary(st.Changes))
	}
	return fmt.Sprintf("worktree %s on branch %s: %s", st.Path, st.Branch, changeSummary(st.Changes))
}

func changeSummary(ch worktree.Changes) string {
	s := ch.Summary
	if s == "" {
		s = "no file differs from the base"
	}
	if ch.Commits > 1 {
		s += fmt.Sprintf(", %d commits", ch.Commits)
	}
	return s
}

// WorktreeOutcome is what became of a child's worktree at settlement.
type WorktreeOutcome struct {
	WorktreeRecord
	// Kept is true when the worktree has changes and stays.
	Kept    bool
	Changes worktree.Changes
	// Commit is the branch's head when it holds the child's work (the
	// commit settlement made of what the child left uncommitted, or the
	// child's own last commit); "" otherwise.
	Commit string
	// Err is set when git failed; the worktree is then kept.
	Err error
}

// Work is what a settled child did, for the commit that holds its work:
// the task's label and the child's final output.
type Work struct {
	Label  string
	Output []session.Block
	Stop   string
}

// message is the commit message of the child id's work: the task, then
// the child's summary (its final output, bounded), then a trailer naming
// the child.
func (w Work) message(id string) string {
	title := oneLine(w.Label)
	if title == "" {
		title = "Work of subagent " + id
	}
	body := strings.TrimSpace(session.JoinText(w.Output, ""))
	if body == "" && w.Stop != "" {
		body = fmt.Sprintf("The subagent stopped (%s) before it summarized its work.", w.Stop)
	}
	if r := []rune(body); len(r) > 4000 {
		body = string(r[:4000]) + "…"
	}
	msg := title + "\n\n"
	if body != "" {
		msg += body + "\n\n"
	}
	return msg + "Subagent-Id: " + id + "\n"
}

// settleWorktree removes act's worktree when it is untouched, else
// commits what the child left uncommitted on its branch, and reports what
// it did (nil without a worktree). The agent is closed by now, so nothing
// writes in the worktree any more.
func (c *Continuations) settleWorktree(act *activation, w Work) *WorktreeOutcome {
	return c.settleTree(context.Background(), act.id, act.worktree, &w)
}

// SettleWorktree settles the worktree of a one-shot child whose run was
// disposed (StartIsolated): removed when untouched, else its work
// committed on its branch, kept and reported; nil without a worktree.
func (s *Service) SettleWorktree(ctx context.Context, childID string, rec *WorktreeRecord, w Work) *WorktreeOutcome {
	return s.cont.settleTree(context.WithoutCancel(ctx), childID, rec, &w)
}

// settleTree removes the worktree rec of child id when it is untouched;
// otherwise, with w, it commits what the child left uncommitted on the
// branch (w nil: nothing is committed, as for a restored worktree whose
// resume failed), keeps it and reports what it did (nil without a
// worktree). Nothing writes in it any more: the child's agent is closed.
func (c *Continuations) settleTree(ctx context.Context, id string, rec *WorktreeRecord, w *Work) *WorktreeOutcome {
	if rec == nil || c.worktrees == nil {
		return nil
	}
	out := &WorktreeOutcome{WorktreeRecord: *rec}
	ch, err := c.worktrees.Changes(ctx, rec.tree())
	if err == nil && ch.Changed && w != nil {
		head, committed, cerr := c.worktrees.Commit(ctx, rec.tree(), w.message(id))
		switch {
		case cerr != nil:
			c.log.Warn(fmt.Sprintf("subagent %q: committing its work on %s failed; it stays uncommitted in the worktree: %v", id, rec.Branch, cerr))
		case committed:
			ch, err = c.worktrees.Changes(ctx, rec.tree())
		}
		if cerr == nil && head != rec.Base {
			out.Commit = head
		}
	}
	switch {
	case err != nil:
		out.Kept, out.Err = true, err
	case ch.Changed:
		out.Kept, out.Changes = true, ch
	default:
		if err := c.worktrees.Remove(ctx, rec.tree()); err != nil {
			out.Kept, out.Err = true, err
		}
	}
	if out.Err != nil {
		c.log.Warn(fmt.Sprintf("subagent %q worktree %s kept: %v", id, rec.Path, out.Err))
	}
	return out
}

// worktreeNotice is the settlement notice's account of the worktree.
func worktreeNotice(o *WorktreeOutcome) session.Block {
	switch {
	case o.Err != nil:
		return session.Text(fmt.Sprintf("Its worktree is kept at %s on branch %s: git could not tell whether it changed (%v).", o.Path, o.Branch, o.Err))
	case !o.Kept:
		return session.Text(fmt.Sprintf("Its worktree made no changes and was removed (branch %s deleted).", o.Branch))
	}
	text := fmt.Sprintf("Its worktree is kept at %s on branch %s: %s.", o.Path, o.Branch, changeSummary(o.Changes))
	if o.Commit != "" {
		text = fmt.Sprintf("Its work is committed on branch %s (commit %s), worktree kept at %s: %s.", o.Branch, shortHash(o.Commit), o.Path, changeSummary(o.Changes))
	}
	if o.Changes.Stat != "" {
		text += "\n" + o.Changes.Stat
	}
	return session.Text(text + "\nMerge it into your branch with merge_worktree, or drop it with discard_worktree.")
}

// WorktreeState tells what a recorded worktree holds now (for listings).
func (s *Service) WorktreeState(ctx context.Context, rec WorktreeRecord) WorktreeState {
	return InspectWorktree(ctx, s.worktrees, rec)
}

// worktreeRaw is the structured account of a settled worktree in a
// foreground result's raw output.
func worktreeRaw(o *WorktreeOutcome) map[string]any {
	m := map[string]any{"path": o.Path, "branch": o.Branch, "kept": o.Kept}
	if o.Commit != "" {
		m["commit"] = o.Commit
	}
	if o.Kept && o.Err == nil {
		m["summary"] = changeSummary(o.Changes)
		if o.Changes.Stat != "" {
			m["diffstat"] = o.Changes.Stat
		}
	}
	if o.Err != nil {
		m["error"] = o.Err.Error()
	}
	return m
}

// shortHash is a commit's first 12 hex digits.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
