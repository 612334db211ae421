package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Tool names, as models expect them.
const (
	GlobToolName = "glob"
	GrepToolName = "grep"
)

// MaxVisited bounds the entries one search walks, so a search of a huge
// tree ends with a note instead of running on.
const MaxVisited = 500_000

// skippedDirs are version-control directories never searched.
var skippedDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true}

// Tools returns `glob` and `grep` over r.
func Tools(r workspace.Resolver) []tool.Tool { return []tool.Tool{NewGlob(r), NewGrep(r)} }

// root is the resolved directory (or file) a search starts from.
type root struct {
	env   workspace.Env
	path  workspace.Path
	isDir bool
	// walkDir is the directory walked: path.Abs with symlinks resolved.
	walkDir string
	display *session.ToolDisplay
}

// shown is how a path found by the walk is shown to the model: under the
// root's name as given, relative to the cwd when inside it.
func (rt root) shown(path string) string {
	return workspace.DisplayPath(rt.env.Cwd, filepath.Join(rt.path.Abs, relTo(rt.walkDir, path)))
}

// resolveRoot resolves the path argument (default: the cwd), asks the
// gate when it lies outside the cwd, and checks that it exists. A
// failure is returned as a ready result.
func resolveRoot(ctx context.Context, r workspace.Resolver, inv tool.Invocation, name, arg string) (root, *tool.Result, error) {
	env, err := workspace.EnvFor(ctx, r, inv)
	if err != nil {
		return root{}, nil, err
	}
	if arg == "" {
		arg = env.Cwd
	}
	p, err := env.Resolve(arg)
	if err != nil {
		return root{}, nil, err
	}
	rt := root{env: env, path: p, display: &session.ToolDisplay{Locations: []session.ToolLocation{{Path: p.Abs}}}}
	fail := func(err error) (root, *tool.Result, error) {
		res := workspace.Failed(err, rt.display)
		return root{}, &res, nil
	}
	if p.OutsideCwd {
		err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
			CallID: inv.CallID, Tool: name, Kind: workspace.KindSearch,
			Title: "Search " + p.Abs + " (outside the working directory)", Display: rt.display, OutsideCwd: true,
		})
		if err != nil {
			return fail(err)
		}
	}
	info, err := os.Stat(p.Abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(&tool.Error{Code: workspace.CodeFileNotFound, Message: fmt.Sprintf("%s does not exist", p.Abs)})
	case err != nil:
		return fail(err)
	}
	rt.isDir = info.IsDir()
	rt.walkDir = p.Abs
	if rt.isDir {
		// The walk does not follow symlinks, so a root given as a
		// symlink is walked at its target and shown under its name.
		if real, err := filepath.EvalSymlinks(p.Abs); err == nil {
			rt.walkDir = real
		}
	}
	return rt, nil, nil
}

// walk calls fn for every non-directory entry under dir in lexical
// (depth-first, by entry name) order, skipping version-control
// directories, unreadable directories and, when ig is not nil, what ig
// ignores (ignored directories are not entered). It stops when fn
// returns errStop, after MaxVisited entries (reporting limited), or when
// ctx ends. Directories are read in parallel ahead of fn (see walker);
// fn runs on the caller's goroutine.
func walk(ctx context.Context, dir string, ig *ignores, fn func(path string, d fs.DirEntry) error) (limited bool, err error) {
	return walkUpTo(ctx, dir, ig, MaxVisited, fn)
}

// walkUpTo is walk cut after limit entries instead of MaxVisited (the
// root counts as one).
func walkUpTo(ctx context.Context, dir string, ig *ignores, limit int, fn func(path string, d fs.DirEntry) error) (limited bool, err error) {
	w := newWalker(ig)
	w.max = limit
	return w.run(ctx, dir, fn)
}

// visitLimit is the entries a search walks: limit, or MaxVisited when
// limit is 0 (the tools' zero value; tests set a small one).
func visitLimit(limit int) int {
	if limit <= 0 {
		return MaxVisited
	}
	return limit
}

// stoppedNote is the note of a search cut after limit entries.
func stoppedNote(limit int) string {
	return fmt.Sprintf("\n[The search stopped after %d entries; search a narrower path.]", limit)
}

var errStop = errors.New("stop walking")

// matcher matches a slash-separated relative path against a glob
// pattern; a pattern without a slash matches the file name at any depth.
// A leading "./" anchors a pattern to the search directory.
type matcher struct {
	pattern  string
	anywhere bool
}

func newMatcher(pattern string) (matcher, error) {
	pattern = filepath.ToSlash(pattern)
	anchored := strings.HasPrefix(pattern, "./")
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" {
		return matcher{}, workspace.InvalidArgs("the glob pattern is empty")
	}
	if strings.HasPrefix(pattern, "/") {
		return matcher{}, workspace.InvalidArgs("the glob pattern %q is absolute; patterns are matched against paths relative to the search directory, so give the directory as path", pattern)
	}
	if !doublestar.ValidatePattern(pattern) {
		return matcher{}, workspace.InvalidArgs("the glob pattern %q is malformed", pattern)
	}
	return matcher{pattern: pattern, anywhere: !anchored && !strings.Contains(pattern, "/")}, nil
}

func (m matcher) match(rel string) bool {
	if m.anywhere {
		rel = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	ok, _ := doublestar.Match(m.pattern, rel)
	return ok
}

// relTo returns path relative to dir with forward slashes.
func relTo(dir, path string) string {
	// The walk's paths are dir + "/" + rel: slice them (Rel cleans).
	if len(path) > len(dir) && strings.HasPrefix(path, dir) && (path[len(dir)] == '/' || strings.HasSuffix(dir, "/")) {
		if rel := strings.TrimPrefix(path[len(dir):], "/"); rel != "" {
			return rel
		}
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

// ignoresFor returns the ignore rules of a walk of rt, or nil when the
// caller asked for ignored files too.
func ignoresFor(rt root, includeIgnored bool) *ignores {
	if includeIgnored {
		return nil
	}
	return loadIgnores(rt.env.Cwd, rt.walkDir)
}

type searchArgs struct {
	Path string `json:"path"`
}

// locations is the Locator of the search tools: the path argument, if any.
func locations(args json.RawMessage) []session.ToolLocation {
	var a searchArgs
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil
	}
	return []session.ToolLocation{{Path: a.Path}}
}
