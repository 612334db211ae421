package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/internal/ownpaths"
)

// Code is a stable failure code of this package.
type Code string

// Codes.
const (
	// CodeNotARepository: the directory is not inside a git work tree.
	CodeNotARepository Code = "WORKTREE_NOT_A_REPOSITORY"
	// CodeGitUnavailable: the git command could not be run at all.
	CodeGitUnavailable Code = "WORKTREE_GIT_UNAVAILABLE"
	// CodeInvalidName: the name cannot be a folder and branch name.
	CodeInvalidName Code = "WORKTREE_INVALID_NAME"
	// CodeNoCommit: the repository has no commit to start from.
	CodeNoCommit Code = "WORKTREE_NO_COMMIT"
	// CodeExists: the worktree folder or its branch already exists.
	CodeExists Code = "WORKTREE_EXISTS"
	// CodeGitFailed: a git command failed (the message carries its stderr).
	CodeGitFailed Code = "WORKTREE_GIT_FAILED"
	// CodeBroken: the worktree's folder is there but is not a git
	// worktree of its own any more (its .git file is gone or damaged),
	// so git cannot tell what it holds.
	CodeBroken Code = "WORKTREE_BROKEN"
)

// Error is this package's typed error.
type Error = errcode.Coded[Code]

// Dir is the folder, relative to a repository's root, that holds the
// subagents' worktrees.
const Dir = ".acp-agent/worktrees"

// BranchPrefix prefixes the branch of every worktree.
const BranchPrefix = "acp-agent/"

// Worktree is one created worktree.
type Worktree struct {
	// Repo is the root of the repository the worktree belongs to.
	Repo string
	// Path is the worktree's folder.
	Path string
	// Branch is the worktree's branch (short name).
	Branch string
	// Base is the commit the branch started from.
	Base string
}

// Changes is what a worktree holds beyond its base commit.
type Changes struct {
	// Changed is true when the worktree has uncommitted changes
	// (untracked files included) or commits beyond its base.
	Changed bool
	// Commits counts the branch's commits beyond its base.
	Commits int
	// Summary is git's one-line summary of the diff against the base
	// ("2 files changed, 3 insertions(+), 1 deletion(-)"), "" when the
	// tree equals the base.
	Summary string
	// Stat is the full diffstat (one line per file, then the summary).
	Stat string
}

// Git runs git. The zero value runs "git" from PATH with the process's
// environment.
type Git struct {
	// Path is the git executable (default "git").
	Path string
	// Env is appended to the process's environment for every command
	// (for example GIT_AUTHOR_DATE in tests and scenarios).
	Env []string
}

// run runs git with args in dir and returns its stdout (trailing newline
// trimmed).
func (g Git) run(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	path := g.Path
	if path == "" {
		path = "git"
	}
	// The repository's config must not run code through the agent: no
	// fsmonitor, no hooks (post-checkout runs on worktree add), as the
	// environment probe does (agent/prompt/env.go).
	cmd := exec.CommandContext(ctx, path, append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), append(g.Env, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return "", errcode.Errorf(CodeGitUnavailable, "run git: %w", err)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = exitErr.Error()
		}
		return "", &Error{Code: CodeGitFailed, Message: fmt.Sprintf("git %s: %s", strings.Join(args, " "), msg), Err: err}
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// Root returns the root of the git work tree holding dir, or a
// CodeNotARepository error.
func (g Git) Root(ctx context.Context, dir string) (string, error) {
	out, err := g.run(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == CodeGitFailed {
			return "", &Error{Code: CodeNotARepository, Message: fmt.Sprintf("%s is not inside a git repository", dir), Err: err}
		}
		return "", err
	}
	return filepath.Clean(out), nil
}

// Create creates the worktree of the repository holding dir for name:
// folder <root>/.acp-agent/worktrees/<name> on the new branch
// acp-agent/<name>, started from HEAD. On failure it leaves nothing behind
// (no folder, no branch, no ignore file it created).
func (g Git) Create(ctx context.Context, dir, name string) (Worktree, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return Worktree{}, errcode.New(CodeInvalidName, fmt.Sprintf("worktree name %q is not a single folder name", name))
	}
	root, err := g.Root(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	branch := BranchPrefix + name
	if _, err := g.run(ctx, root, nil, "check-ref-format", "--branch", branch); err != nil {
		if ctx.Err() != nil {
			return Worktree{}, err
		}
		return Worktree{}, &Error{Code: CodeInvalidName, Message: fmt.Sprintf("worktree name %q is not a valid branch name", name), Err: err}
	}
	base, err := g.run(ctx, root, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return Worktree{}, err
		}
		return Worktree{}, &Error{Code: CodeNoCommit, Message: fmt.Sprintf("the repository at %s has no commit to start a worktree from", root), Err: err}
	}
	if _, err := g.run(ctx, root, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return Worktree{}, errcode.New(CodeExists, fmt.Sprintf("branch %s already exists", branch))
	} else if ctx.Err() != nil {
		return Worktree{}, err
	}
	wt := Worktree{Repo: root, Path: filepath.Join(root, filepath.FromSlash(Dir), name), Branch: branch, Base: base}
	if _, err := os.Lstat(wt.Path); err == nil {
		return Worktree{}, errcode.New(CodeExists, fmt.Sprintf("worktree folder %s already exists", wt.Path))
	}
	undo, err := ensureIgnored(root)
	if err != nil {
		return Worktree{}, err
	}
	if _, err := g.run(ctx, root, nil, "worktree", "add", "--quiet", "-b", branch, wt.Path, base); err != nil {
		// git may have made the branch or the folder before failing.
		bg := context.WithoutCancel(ctx)
		_ = os.RemoveAll(wt.Path)
		_, _ = g.run(bg, root, nil, "worktree", "prune")
		_, _ = g.run(bg, root, nil, "branch", "-D", branch)
		undo()
		return Worktree{}, err
	}
	return wt, nil
}

// ensureIgnored makes <root>/.acp-agent/worktrees with a .gitignore of "*"
// (which ignores itself too). undo removes what it created.
func ensureIgnored(root string) (undo func(), err error) {
	var created []string
	undo = func() {
		for i := len(created) - 1; i >= 0; i-- {
			_ = os.Remove(created[i])
		}
	}
	dir := root
	for _, part := range strings.Split(Dir, "/") {
		dir = filepath.Join(dir, part)
		// Claimed, so a sandboxed command running meanwhile does not
		// get .acp-agent/ taken for its own and moved aside.
		end := ownpaths.Begin(dir)
		err := os.Mkdir(dir, 0o755)
		end(err == nil)
		if err == nil {
			created = append(created, dir)
		} else if !errors.Is(err, os.ErrExist) {
			undo()
			return nil, errcode.Errorf(CodeGitFailed, "create %s: %w", dir, err)
		}
	}
	ignore := filepath.Join(dir, ".gitignore")
	f, err := os.OpenFile(ignore, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	switch {
	case err == nil:
		created = append(created, ignore)
		_, werr := f.WriteString("# subagent worktrees of acp-agent\n*\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			undo()
			return nil, errcode.Errorf(CodeGitFailed, "write %s: %w", ignore, werr)
		}
	case !errors.Is(err, os.ErrExist):
		undo()
		return nil, errcode.Errorf(CodeGitFailed, "create %s: %w", ignore, err)
	}
	return undo, nil
}

// Changes reports what wt holds beyond its base: uncommitted changes
// (untracked files included, ignored files not) and commits. The diffstat
// compares the base with the worktree's files as they are, read through a
// temporary index so the worktree's own index is untouched.
//
// A worktree whose folder is gone is judged by its branch: commits beyond
// the base are changes (the branch is what is left of the work), a branch
// at its base or no branch at all is nothing to keep. A folder that git
// does not see as a worktree of its own (its .git file gone or damaged:
// git would then answer for the enclosing repository) is a CodeBroken
// error, never "untouched".
func (g Git) Changes(ctx context.Context, wt Worktree) (Changes, error) {
	if !Exists(wt) {
		return g.branchChanges(ctx, wt)
	}
	if err := g.checkOwn(ctx, wt); err != nil {
		return Changes{}, err
	}
	status, err := g.run(ctx, wt.Path, nil, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return Changes{}, err
	}
	count, err := g.run(ctx, wt.Path, nil, "rev-list", "--count", wt.Base+"..HEAD")
	if err != nil {
		return Changes{}, err
	}
	var ch Changes
	ch.Commits, _ = strconv.Atoi(count)
	ch.Changed = status != "" || ch.Commits > 0
	if !ch.Changed {
		return ch, nil
	}
	tmp, err := os.CreateTemp("", "acp-agent-index-*")
	if err != nil {
		return Changes{}, errcode.Errorf(CodeGitFailed, "temporary index: %w", err)
	}
	index := tmp.Name()
	_ = tmp.Close()
	_ = os.Remove(index) // git wants to create it itself
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := g.run(ctx, wt.Path, env, "read-tree", "HEAD"); err != nil {
		return Changes{}, err
	}
	if _, err := g.run(ctx, wt.Path, env, "add", "--all", "."); err != nil {
		return Changes{}, err
	}
	if ch.Stat, err = g.run(ctx, wt.Path, env, "diff", "--cached", "--no-textconv", "--no-ext-diff", "--stat=100", "--no-color", wt.Base); err != nil {
		return Changes{}, err
	}
	if ch.Summary, err = g.run(ctx, wt.Path, env, "diff", "--cached", "--no-textconv", "--no-ext-diff", "--shortstat", "--no-color", wt.Base); err != nil {
		return Changes{}, err
	}
	ch.Summary = strings.TrimSpace(ch.Summary)
	return ch, nil
}

// checkOwn makes sure git sees wt's folder as a work tree of its own.
func (g Git) checkOwn(ctx context.Context, wt Worktree) error {
	top, err := g.run(ctx, wt.Path, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &Error{Code: CodeBroken, Message: fmt.Sprintf("%s is not a usable git worktree: %v", wt.Path, err), Err: err}
	}
	want, werr := filepath.EvalSymlinks(wt.Path)
	got, gerr := filepath.EvalSymlinks(top)
	if werr != nil || gerr != nil || want != got {
		return errcode.New(CodeBroken, fmt.Sprintf("%s is not a git worktree any more (its .git file is missing or damaged; git sees the work tree %s)", wt.Path, top))
	}
	return nil
}

// branchChanges judges a worktree whose folder is gone by its branch.
func (g Git) branchChanges(ctx context.Context, wt Worktree) (Changes, error) {
	if _, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err != nil {
		var e *Error
		if ctx.Err() != nil || !errors.As(err, &e) || e.Code != CodeGitFailed {
			return Changes{}, err
		}
		return Changes{}, nil // no folder, no branch: nothing is left
	}
	count, err := g.run(ctx, wt.Repo, nil, "rev-list", "--count", wt.Base+".."+wt.Branch)
	if err != nil {
		return Changes{}, err
	}
	var ch Changes
	ch.Commits, _ = strconv.Atoi(count)
	if ch.Changed = ch.Commits > 0; !ch.Changed {
		return ch, nil
	}
	if ch.Stat, err = g.run(ctx, wt.Repo, nil, "diff", "--stat=100", "--no-color", wt.Base, wt.Branch); err != nil {
		return Changes{}, err
	}
	if ch.Summary, err = g.run(ctx, wt.Repo, nil, "diff", "--shortstat", "--no-color", wt.Base, wt.Branch); err != nil {
		return Changes{}, err
	}
	ch.Summary = strings.TrimSpace(ch.Summary)
	return ch, nil
}

// Exists reports whether wt's folder is still there.
func Exists(wt Worktree) bool {
	_, err := os.Lstat(wt.Path)
	return err == nil
}

// Remove removes wt's worktree (even with changes) and deletes its branch.
// A worktree whose folder is already gone is pruned. The worktrees folder
// goes too once it holds nothing but its .gitignore, and .acp-agent once
// empty.
func (g Git) Remove(ctx context.Context, wt Worktree) error {
	if Exists(wt) {
		if _, err := g.run(ctx, wt.Repo, nil, "worktree", "remove", "--force", wt.Path); err != nil {
			return err
		}
	} else if _, err := g.run(ctx, wt.Repo, nil, "worktree", "prune"); err != nil {
		return err
	}
	if _, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		if _, err := g.run(ctx, wt.Repo, nil, "branch", "-D", wt.Branch); err != nil {
			return err
		}
	} else if ctx.Err() != nil {
		return err
	}
	dir := filepath.Join(wt.Repo, filepath.FromSlash(Dir))
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 1 && entries[0].Name() == ".gitignore" {
		_ = os.Remove(filepath.Join(dir, ".gitignore"))
		_ = os.Remove(dir)
		_ = os.Remove(filepath.Dir(dir)) // only when empty
	}
	return nil
}

// Restore brings back wt's folder when it is gone (a cold resume of a
// child whose untouched worktree was removed at settlement): on its branch
// when the branch still exists, else on a new branch from its base. A
// present folder is left as it is.
func (g Git) Restore(ctx context.Context, wt Worktree) error {
	if Exists(wt) {
		return nil
	}
	if _, err := g.run(ctx, wt.Repo, nil, "worktree", "prune"); err != nil {
		return err
	}
	undo, err := ensureIgnored(wt.Repo)
	if err != nil {
		return err
	}
	args := []string{"worktree", "add", "--quiet", wt.Path, wt.Branch}
	if _, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err != nil {
		if ctx.Err() != nil {
			undo()
			return err
		}
		args = []string{"worktree", "add", "--quiet", "-b", wt.Branch, wt.Path, wt.Base}
	}
	if _, err := g.run(ctx, wt.Repo, nil, args...); err != nil {
		undo()
		return err
	}
	return nil
}
