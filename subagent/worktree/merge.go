package worktree

// This file turns a worktree's work into something a person can merge:
// Commit commits what the child left uncommitted on its branch (at
// settlement), Preview shows what a merge of the branch would bring, and
// Merge merges (or squashes) it into the branch checked out where the
// parent works, aborting cleanly on a conflict.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Codes of merging.
const (
	// CodeConflict: the merge conflicted; it was aborted and the parent's
	// tree is as it was. The error lists the files (MergeConflict).
	CodeConflict Code = "WORKTREE_MERGE_CONFLICT"
	// CodeNothingToMerge: the branch brings nothing (no commit beyond
	// what the parent's branch has), or is gone.
	CodeNothingToMerge Code = "WORKTREE_NOTHING_TO_MERGE"
)

// fallbackIdentity is the author of the agent's commits when git has no
// user.name or user.email configured (git would refuse to commit).
var fallbackIdentity = []string{
	"GIT_AUTHOR_NAME=acp-agent", "GIT_AUTHOR_EMAIL=acp-agent@localhost",
	"GIT_COMMITTER_NAME=acp-agent", "GIT_COMMITTER_EMAIL=acp-agent@localhost",
}

// identity returns the environment that makes git commit in dir: nothing
// when git config (or Git.Env) names the person, else fallbackIdentity.
func (g Git) identity(ctx context.Context, dir string) []string {
	for _, kv := range g.Env {
		if strings.HasPrefix(kv, "GIT_AUTHOR_NAME=") {
			return nil
		}
	}
	name, _ := g.run(ctx, dir, nil, "config", "user.name")
	email, _ := g.run(ctx, dir, nil, "config", "user.email")
	if name != "" && email != "" {
		return nil
	}
	return fallbackIdentity
}

// Commit commits everything wt's folder holds beyond its HEAD (new,
// changed and deleted files; ignored files not) on its branch, with
// message, the author from git config. It returns the branch's head
// commit and whether it made one (false: nothing was uncommitted). A
// worktree whose folder is gone commits nothing.
func (g Git) Commit(ctx context.Context, wt Worktree, message string) (head string, committed bool, err error) {
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if !Exists(wt) {
		head, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch)
		return head, false, err
	}
	if err := g.checkOwn(ctx, wt); err != nil {
		return "", false, err
	}
	status, err := g.run(ctx, wt.Path, nil, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "", false, err
	}
	if status != "" {
		if _, err := g.run(ctx, wt.Path, nil, "add", "--all", "."); err != nil {
			return "", false, err
		}
		if _, err := g.run(ctx, wt.Path, g.identity(ctx, wt.Path), "commit", "--quiet", "--no-verify", "-m", message); err != nil {
			return "", false, err
		}
		committed = true
	}
	head, err = g.run(ctx, wt.Path, nil, "rev-parse", "HEAD")
	return head, committed, err
}

// FileDiff is one file a merge would change: its text before (nil when
// the merge adds it) and after ("" when it deletes it; Deleted set).
type FileDiff struct {
	Path    string
	OldText *string
	NewText string
	Deleted bool
	// Binary is set when either side is not text (Old/NewText empty).
	Binary bool
}

// Preview returns what merging wt's branch into the branch checked out in
// into would bring: the files changed between their merge base and the
// branch, each with its text before and after (at most maxFiles files,
// and texts of at most maxBytes; more is cut and counted in more).
func (g Git) Preview(ctx context.Context, into string, wt Worktree, maxFiles, maxBytes int) (files []FileDiff, more int, err error) {
	base, err := g.run(ctx, into, nil, "merge-base", "HEAD", "refs/heads/"+wt.Branch)
	if err != nil {
		return nil, 0, err
	}
	out, err := g.run(ctx, into, nil, "diff", "--no-textconv", "--no-ext-diff", "--no-renames", "--name-status", "-z", base, "refs/heads/"+wt.Branch)
	if err != nil {
		return nil, 0, err
	}
	fields := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		if len(files) >= maxFiles {
			more++
			continue
		}
		fd := FileDiff{Path: path}
		if !strings.HasPrefix(status, "A") {
			old, bin := g.blob(ctx, into, base, path, maxBytes)
			fd.OldText, fd.Binary = &old, bin
		}
		if strings.HasPrefix(status, "D") {
			fd.Deleted = true
		} else {
			var bin bool
			fd.NewText, bin = g.blob(ctx, into, "refs/heads/"+wt.Branch, path, maxBytes)
			fd.Binary = fd.Binary || bin
		}
		if fd.Binary {
			empty := ""
			if fd.OldText != nil {
				fd.OldText = &empty
			}
			fd.NewText = ""
		}
		files = append(files, fd)
	}
	return files, more, nil
}

// blob returns path's text at rev (cut to max bytes) and whether it is
// binary.
func (g Git) blob(ctx context.Context, dir, rev, path string, max int) (string, bool) {
	text, err := g.runRaw(ctx, dir, nil, "cat-file", "blob", rev+":"+path)
	if err != nil {
		return "", false
	}
	if strings.IndexByte(text, 0) >= 0 {
		return "", true
	}
	if len(text) > max {
		text = text[:max] + "\n… (cut)"
	}
	return text, false
}

// MergeResult is a merge that went through.
type MergeResult struct {
	// Into is the branch merged into ("" for a detached HEAD), Head its
	// new head commit.
	Into, Head string
	// Squash is set when the branch was squashed into one commit.
	Squash bool
	// Stat is the diffstat of what the merge brought.
	Stat string
}

// MergeConflict is the CodeConflict error's detail: the conflicting files.
type MergeConflict struct {
	Files []string
}

func (m *MergeConflict) Error() string {
	return "the merge conflicts in " + strings.Join(m.Files, ", ")
}

// Merge merges wt's branch into the branch checked out in into (the
// parent's work tree): a normal merge (fast-forward when it can), or with
// squash one new commit with message. A conflict aborts the merge, so
// into is as it was, and is a CodeConflict error wrapping a
// *MergeConflict with the files. Changes in into that the merge would
// overwrite make git refuse (CodeGitFailed), touching nothing.
func (g Git) Merge(ctx context.Context, into string, wt Worktree, squash bool, message string) (MergeResult, error) {
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return MergeResult{}, err
	}
	defer unlock()
	ref := "refs/heads/" + wt.Branch
	if _, err := g.run(ctx, into, nil, "rev-parse", "--verify", "--quiet", ref); err != nil {
		if ctx.Err() != nil {
			return MergeResult{}, err
		}
		return MergeResult{}, errcode.New(CodeNothingToMerge, fmt.Sprintf("branch %s is gone: there is nothing to merge", wt.Branch))
	}
	if n, err := g.run(ctx, into, nil, "rev-list", "--count", "HEAD.."+ref); err != nil {
		return MergeResult{}, err
	} else if n == "0" {
		return MergeResult{}, errcode.New(CodeNothingToMerge, fmt.Sprintf("branch %s brings nothing the current branch does not have", wt.Branch))
	}
	before, err := g.run(ctx, into, nil, "rev-parse", "HEAD")
	if err != nil {
		return MergeResult{}, err
	}
	res := MergeResult{Squash: squash}
	res.Into, _ = g.run(ctx, into, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	id := g.identity(ctx, into)
	args := []string{"merge", "--no-verify", "--no-edit", "-m", message, ref}
	if squash {
		args = []string{"merge", "--squash", ref}
	}
	if _, err := g.run(ctx, into, id, args...); err != nil {
		if ctx.Err() != nil {
			g.abortMerge(into, squash)
			return MergeResult{}, err
		}
		files, _ := g.run(context.WithoutCancel(ctx), into, nil, "diff", "--name-only", "--diff-filter=U")
		if files == "" {
			// Refused before it started (local changes in the way): git
			// touched nothing.
			return MergeResult{}, err
		}
		g.abortMerge(into, squash)
		mc := &MergeConflict{Files: strings.Split(files, "\n")}
		return MergeResult{}, &Error{Code: CodeConflict, Message: fmt.Sprintf("merging %s conflicts in %s; the merge was aborted and nothing changed", wt.Branch, strings.Join(mc.Files, ", ")), Err: mc}
	}
	if squash {
		if _, err := g.run(ctx, into, id, "commit", "--quiet", "--no-verify", "-m", message); err != nil {
			g.abortMerge(into, true)
			return MergeResult{}, err
		}
	}
	if res.Head, err = g.run(ctx, into, nil, "rev-parse", "HEAD"); err != nil {
		return MergeResult{}, err
	}
	res.Stat, _ = g.run(ctx, into, nil, "diff", "--no-textconv", "--no-ext-diff", "--stat=100", "--no-color", before, res.Head)
	return res, nil
}

// abortMerge puts into back as it was before a merge that failed.
func (g Git) abortMerge(into string, squash bool) {
	ctx := context.Background()
	if !squash {
		if _, err := g.run(ctx, into, nil, "merge", "--abort"); err == nil {
			return
		}
	}
	_, _ = g.run(ctx, into, nil, "reset", "--merge")
}

// IsConflict returns the conflicting files of a CodeConflict error.
func IsConflict(err error) ([]string, bool) {
	var mc *MergeConflict
	if errors.As(err, &mc) {
		return mc.Files, true
	}
	return nil, false
}

// How a worktree's work ended when a person or the parent acted on it
// (End, Ended).
const (
	EndMerged    = "merged"
	EndDiscarded = "discarded"
)

// endRef is the ref that records how wt's work ended: refs/acp-agent/
// merged/<name> at the merged commit, or refs/acp-agent/discarded/<name>
// at the base (so it keeps no object alive). Outside refs/heads, no
// branch listing shows it; listings read it once the worktree and its
// branch are gone, so they can say "merged" rather than "no changes".
func endRef(wt Worktree, how string) string {
	return "refs/acp-agent/" + how + "/" + strings.TrimPrefix(wt.Branch, BranchPrefix)
}

// End records how wt's work ended (EndMerged at commit, or EndDiscarded).
func (g Git) End(ctx context.Context, wt Worktree, how, commit string) error {
	if how == EndDiscarded || commit == "" {
		commit = wt.Base
	}
	_, err := g.run(ctx, wt.Repo, nil, "update-ref", endRef(wt, how), commit)
	return err
}

// Ended returns how wt's work ended and the commit recorded ("" when
// neither End was recorded, or git cannot tell).
func (g Git) Ended(ctx context.Context, wt Worktree) (how, commit string) {
	out, err := g.run(ctx, wt.Repo, nil, "for-each-ref", "--format=%(refname) %(objectname)", endRef(wt, EndMerged), endRef(wt, EndDiscarded))
	if err != nil || out == "" {
		return "", ""
	}
	ref, commit, _ := strings.Cut(strings.SplitN(out, "\n", 2)[0], " ")
	if strings.HasPrefix(ref, "refs/acp-agent/"+EndMerged+"/") {
		return EndMerged, commit
	}
	return EndDiscarded, commit
}
