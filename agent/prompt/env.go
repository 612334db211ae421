package prompt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/internal/gitrun"
)

// DefaultProbeTimeout bounds the git queries of Probe: a slow or huge
// repository must not delay the first turn.
const DefaultProbeTimeout = 2 * time.Second

// Env is the environment block: where the agent runs. Zero Git fields
// mean the cwd is not inside a git work tree (or git did not answer in
// time).
type Env struct {
	Cwd   string
	OS    string
	Arch  string
	Shell string
	// Date is the session's start day, YYYY-MM-DD.
	Date    string
	GitRoot string
	Branch  string
	Dirty   bool
	// StatusUnknown is set when git status did not answer (a timeout on a
	// loaded machine, a broken repository): the prompt then says so rather
	// than calling the tree clean.
	StatusUnknown bool
}

// ProbeOptions are Probe's inputs besides the cwd. Every field is
// injectable so scenario runs are deterministic.
type ProbeOptions struct {
	// Now is the session's start (its header's createdAt).
	Now time.Time
	// Getenv reads SHELL; nil means os.Getenv.
	Getenv func(string) string
	// OS and Arch override runtime.GOOS and runtime.GOARCH when set.
	OS, Arch string
	// Timeout bounds the git queries; 0 means DefaultProbeTimeout.
	Timeout time.Duration
	// NoGit skips the git commands: the root is still found by its .git
	// entry and the branch read from .git/HEAD, but dirty is unknown
	// (reported clean).
	NoGit bool
}

// Probe computes the environment block for cwd. It never fails: what it
// cannot find out in time is left empty.
func Probe(ctx context.Context, cwd string, o ProbeOptions) Env {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{Cwd: cwd, OS: o.OS, Arch: o.Arch, Shell: getenv("SHELL"), Date: o.Now.UTC().Format(time.DateOnly)}
	if e.OS == "" {
		e.OS = runtime.GOOS
	}
	if e.Arch == "" {
		e.Arch = runtime.GOARCH
	}
	if e.Shell == "" {
		e.Shell = "/bin/sh"
	}
	if cwd == "" {
		return e
	}
	e.GitRoot = FindGitRoot(cwd)
	if e.GitRoot == "" {
		return e
	}
	if o.NoGit {
		e.Branch = headBranch(e.GitRoot)
		return e
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The branch from .git/HEAD costs no process; git answers for the
	// rest (worktrees and submodules, whose .git is a file).
	if e.Branch = headBranch(e.GitRoot); e.Branch == "" {
		if out, err := git(ctx, cwd, "rev-parse", "--abbrev-ref", "HEAD"); err == nil {
			if e.Branch = strings.TrimSpace(string(out)); e.Branch == "HEAD" {
				e.Branch = "(detached HEAD)"
			}
		}
	}
	if out, err := git(ctx, cwd, "status", "--porcelain", "--untracked-files=normal"); err == nil {
		e.Dirty = len(bytes.TrimSpace(out)) > 0
	} else {
		e.StatusUnknown = true
	}
	return e
}

// git runs one git query through the agent's one git runner
// (internal/gitrun): no GIT_* variable of the agent's environment (an
// agent started from a git hook has GIT_DIR set, and the probe would
// describe that repository), and nothing the repository's config plants
// runs (core.fsmonitor, run by status; hooks; filter drivers, run by
// status on a racily clean file). The config of a repository is not the
// user's word: a command the agent ran, sandboxed or not, may have
// written it (docs/boundary.md). git runs in its own process group,
// killed as a group when ctx ends, so the timeout of Probe bounds the
// whole wait.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitrun.Command(ctx, "", dir, nil, args...).Output()
}

// FindGitRoot returns the nearest directory at or above dir that holds a
// .git entry (a directory, or a file for worktrees and submodules), or ""
// when there is none.
func FindGitRoot(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// headBranch reads the branch from .git/HEAD; "" for a detached head or a
// .git file.
func headBranch(root string) string {
	b, err := os.ReadFile(filepath.Join(root, ".git", "HEAD"))
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(s, "ref: refs/heads/"); ok {
		return ref
	}
	return ""
}
