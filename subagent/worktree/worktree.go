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

	"github.com/acp-agent/acp-agent/internal/beneath"
	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/internal/gitrun"
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
	// CodeUnsafeFolder: .acp-agent or .acp-agent/worktrees is not a
	// real directory beneath the repository (a symlink committed to it,
	// say), so the agent neither checks a worktree out there nor deletes
	// from it.
	CodeUnsafeFolder Code = "WORKTREE_UNSAFE_FOLDER"
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
	// Commits counts the branch's commits beyond its base; Head is the
	// branch's head commit when there are any.
	Commits int
	Head    string
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
	// Env is appended to the hardened environment of every command
	// (gitrun.Env: the process's without GIT_*), for example
	// GIT_AUTHOR_DATE in tests and scenarios.
	Env []string
}

// run runs git with args in dir and returns its stdout (trailing newline
// trimmed).
func (g Git) run(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	out, err := g.runRaw(ctx, dir, env, args...)
	return strings.TrimRight(out, "\n"), err
}

// runRaw is run keeping stdout as git wrote it.
func (g Git) runRaw(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	// The one git runner (internal/gitrun): no GIT_* of the agent's
	// environment (an agent started from a git hook has GIT_DIR and
	// GIT_INDEX_FILE set), no fsmonitor, hooks or filter drivers of the
	// repository's config (post-checkout and smudge run on worktree add).
	cmd := gitrun.Command(ctx, g.Path, dir, append(append([]string(nil), g.Env...), env...), args...)
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
	return stdout.String(), nil
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
// (no folder, no branch, no ignore file it created). It is Plan then Add.
func (g Git) Create(ctx context.Context, dir, name string) (Worktree, error) {
	wt, err := g.Plan(ctx, dir, name)
	if err != nil {
		return Worktree{}, err
	}
	return wt, g.Add(ctx, wt)
}

// Plan works out the worktree Create would make for name in the
// repository holding dir (root, folder, branch and base commit) and checks
// that it can be made, without making anything: a caller records it
// durably before Add runs (an intent), so a process killed during Add
// leaves a record of what to remove.
func (g Git) Plan(ctx context.Context, dir, name string) (Worktree, error) {
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
	wt := Worktree{Repo: root, Path: filepath.Join(root, filepath.FromSlash(Dir), name), Branch: branch, Base: base}
	if err := g.checkNew(ctx, wt); err != nil {
		return Worktree{}, err
	}
	return wt, nil
}

// checkNew refuses a planned worktree whose branch or folder exists, or
// whose worktrees folder is unsafe.
func (g Git) checkNew(ctx context.Context, wt Worktree) error {
	if _, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		return errcode.New(CodeExists, fmt.Sprintf("branch %s already exists", wt.Branch))
	} else if ctx.Err() != nil {
		return err
	}
	if err := checkFolder(wt.Repo); err != nil {
		return err
	}
	if _, err := os.Lstat(wt.Path); err == nil {
		return errcode.New(CodeExists, fmt.Sprintf("worktree folder %s already exists", wt.Path))
	}
	return nil
}

// Add makes the planned worktree wt (Plan): the ignore file, the branch
// from wt.Base and the checkout. Git steps on one repository run one at a
// time (Lock). A cancelled ctx kills git's process group at once
// (gitrun); on any failure, cancellation included, what git made is
// removed again (Remove: a worktree git left "locked initializing" too).
func (g Git) Add(ctx context.Context, wt Worktree) error {
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return err
	}
	defer unlock()
	if err := g.checkNew(ctx, wt); err != nil {
		return err
	}
	undo, err := ensureIgnored(wt.Repo)
	if err != nil {
		return err
	}
	if _, err := g.run(ctx, wt.Repo, nil, "worktree", "add", "--quiet", "-b", wt.Branch, wt.Path, wt.Base); err != nil {
		// git may have made the branch or the folder before failing.
		_ = g.remove(context.WithoutCancel(ctx), wt)
		undo()
		return err
	}
	return nil
}

// ensureIgnored makes <root>/.acp-agent/worktrees with a .gitignore of "*"
// (which ignores itself too). undo removes what it created. Everything
// goes through the resolver of the agent's own files (internal/beneath):
// each folder on the way must be a real directory beneath the repository,
// so a .acp-agent or worktrees committed as a symlink is refused
// (CodeUnsafeFolder) and nothing is made or written through it.
func ensureIgnored(root string) (undo func(), err error) {
	r, err := beneath.Open(root)
	if err != nil {
		return nil, errcode.Errorf(CodeGitFailed, "open %s: %w", root, err)
	}
	defer r.Close()
	created, err := r.RealDirs(Dir, 0o755)
	if err != nil {
		return nil, unsafeFolder(err)
	}
	ignore := filepath.Join(root, filepath.FromSlash(Dir), ".gitignore")
	ownIgnore := false
	undo = func() {
		r, err := beneath.Open(root)
		if err != nil {
			return
		}
		defer r.Close()
		if ownIgnore {
			_ = r.Remove(ignore)
		}
		for i := len(created) - 1; i >= 0; i-- {
			_ = r.Remove(created[i])
		}
	}
	werr := r.CreateExcl(ignore, []byte("# subagent worktrees of acp-agent\n*\n"), 0o644)
	switch {
	case werr == nil:
		ownIgnore = true
	case errors.Is(werr, os.ErrExist):
		// Already there: kept as it is, but only a regular file.
		if fi, lerr := r.Lstat(ignore); lerr != nil || !fi.Mode().IsRegular() {
			undo()
			return nil, errcode.New(CodeUnsafeFolder, fmt.Sprintf("%s is refused: it is not a regular file", ignore))
		}
	default:
		undo()
		return nil, unsafeFolder(werr)
	}
	return undo, nil
}

// unsafeFolder maps a refusal of the resolver to CodeUnsafeFolder, and
// any other failure to CodeGitFailed.
func unsafeFolder(err error) error {
	if beneath.Leaves(err) {
		return &Error{Code: CodeUnsafeFolder, Message: err.Error(), Err: err}
	}
	return &Error{Code: CodeGitFailed, Message: err.Error(), Err: err}
}

// checkFolder refuses a worktrees folder (or .acp-agent) that is not a
// real directory beneath root: git would follow a symlink there, check
// out or delete an outside folder.
func checkFolder(root string) error {
	r, err := beneath.Open(root)
	if err != nil {
		return errcode.Errorf(CodeGitFailed, "open %s: %w", root, err)
	}
	defer r.Close()
	if err := r.CheckRealDirs(Dir); err != nil {
		return unsafeFolder(err)
	}
	return nil
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
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return Changes{}, err
	}
	defer unlock()
	return g.changes(ctx, wt)
}

// changes is Changes under the repository's lock.
func (g Git) changes(ctx context.Context, wt Worktree) (Changes, error) {
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
	if ch.Commits > 0 {
		if ch.Head, err = g.run(ctx, wt.Path, nil, "rev-parse", "HEAD"); err != nil {
			return Changes{}, err
		}
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
	if ch.Head, err = g.run(ctx, wt.Repo, nil, "rev-parse", "refs/heads/"+wt.Branch); err != nil {
		return Changes{}, err
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
// A worktree whose folder is already gone is pruned. A half-made one (git
// killed during its checkout leaves it "locked initializing", which prune
// skips and which keeps its branch from being deleted) is unlocked first.
// The worktrees folder goes too once it holds nothing but its .gitignore,
// and .acp-agent once empty. Git steps on one repository run one at a
// time (Lock).
func (g Git) Remove(ctx context.Context, wt Worktree) error {
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return err
	}
	defer unlock()
	return g.remove(ctx, wt)
}

// remove is Remove under the repository's lock.
func (g Git) remove(ctx context.Context, wt Worktree) error {
	// git follows a symlinked worktrees folder: it would delete an
	// outside folder, so nothing is removed through one.
	if err := checkFolder(wt.Repo); err != nil {
		return err
	}
	// Only a lock git itself left (a killed checkout) is lifted; its
	// failure (not locked, not a worktree) is no error.
	if g.lockReason(wt) == "initializing" {
		_, _ = g.run(ctx, wt.Repo, nil, "worktree", "unlock", wt.Path)
	}
	if Exists(wt) {
		if _, err := g.run(ctx, wt.Repo, nil, "worktree", "remove", "--force", wt.Path); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// Not a worktree git knows (a checkout cut before it
			// registered), or a half-made one: its folder is ours.
			removeBeneath(wt.Repo, wt.Path)
			if Exists(wt) {
				return err
			}
		}
	}
	if _, err := g.run(ctx, wt.Repo, nil, "worktree", "prune"); err != nil {
		return err
	}
	if _, err := g.run(ctx, wt.Repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		if _, err := g.run(ctx, wt.Repo, nil, "branch", "-D", wt.Branch); err != nil {
			return err
		}
	} else if ctx.Err() != nil {
		return err
	}
	r, err := beneath.Open(wt.Repo)
	if err != nil {
		return nil
	}
	defer r.Close()
	if r.CheckRealDirs(Dir) != nil {
		return nil // swapped meanwhile: leave it
	}
	if entries, err := r.ReadDir(Dir); err == nil && len(entries) == 1 && entries[0].Name() == ".gitignore" {
		_ = r.Remove(filepath.Join(Dir, ".gitignore"))
		_ = r.Remove(Dir)
		_ = r.Remove(filepath.Dir(Dir)) // only when empty
	}
	return nil
}

// lockReason returns the reason of git's lock on wt ("initializing" for a
// checkout git did not finish), "" when it is not locked or git cannot
// tell.
func (g Git) lockReason(wt Worktree) string {
	out, err := g.run(context.Background(), wt.Repo, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return ""
	}
	want := filepath.Clean(wt.Path)
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			in = filepath.Clean(strings.TrimPrefix(line, "worktree ")) == want
		case in && line == "locked":
			return "locked"
		case in && strings.HasPrefix(line, "locked "):
			return strings.TrimPrefix(line, "locked ")
		}
	}
	return ""
}

// removeBeneath removes path (below root) and what it holds, resolving
// beneath root: a symlink on the way is not followed out.
func removeBeneath(root, path string) {
	r, err := beneath.Open(root)
	if err != nil {
		return
	}
	defer r.Close()
	rel, err := r.Rel(path)
	if err != nil {
		return
	}
	_ = r.RemoveAll(rel)
}

// Restore brings back wt's folder when it is gone (a cold resume of a
// child whose untouched worktree was removed at settlement): on its branch
// when the branch still exists, else on a new branch from its base. A
// present folder is left as it is, unless git left it "locked
// initializing" (a restore killed during its checkout): that one is made
// again.
func (g Git) Restore(ctx context.Context, wt Worktree) error {
	unlock, err := Lock(ctx, wt.Repo)
	if err != nil {
		return err
	}
	defer unlock()
	if Exists(wt) {
		if g.lockReason(wt) != "initializing" {
			return nil
		}
		// A restore cut during its checkout (the agent killed): the
		// half-made folder goes, the branch stays, and it is made again.
		_, _ = g.run(ctx, wt.Repo, nil, "worktree", "unlock", wt.Path)
		if _, err := g.run(ctx, wt.Repo, nil, "worktree", "remove", "--force", wt.Path); err != nil {
			removeBeneath(wt.Repo, wt.Path)
		}
	}
	if err := checkFolder(wt.Repo); err != nil {
		return err
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
		// A cut checkout: its folder goes again, the branch stays as
		// it was (it holds the child's commits when it existed).
		bg := context.WithoutCancel(ctx)
		if g.lockReason(wt) == "initializing" {
			_, _ = g.run(bg, wt.Repo, nil, "worktree", "unlock", wt.Path)
		}
		if _, rerr := g.run(bg, wt.Repo, nil, "worktree", "remove", "--force", wt.Path); rerr != nil {
			removeBeneath(wt.Repo, wt.Path)
		}
		_, _ = g.run(bg, wt.Repo, nil, "worktree", "prune")
		if len(args) > 4 && args[3] == "-b" {
			_, _ = g.run(bg, wt.Repo, nil, "branch", "-D", wt.Branch)
		}
		undo()
		return err
	}
	return nil
}
