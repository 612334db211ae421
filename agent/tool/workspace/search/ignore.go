package search

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ignoreFile is the per-directory ignore file the walk honours.
const ignoreFile = ".gitignore"

// ignores are the git ignore rules one walk honours: .git/info/exclude of
// the repository and the .gitignore files from the repository root down,
// each applying to its own subtree. Pattern semantics are go-git's.
//
// A directory named as the search root is searched even when ignored (as
// ripgrep does): rules from above the root that match the root or one of
// its ancestors are dropped, so they do not hide the root's contents.
type ignores struct {
	// walkDir is the walked directory; rootParts is its path, as
	// components, relative to the directory pattern domains start from
	// (the repository root, else the cwd, else walkDir itself).
	walkDir   string
	rootParts []string
	// outer are the rules in force at walkDir from above it.
	outer []gitignore.Pattern
	// inDir holds the rules in force in each directory entered, in
	// ascending priority; directories without an ignore file share
	// their parent's slice.
	inDir map[string][]gitignore.Pattern
	// skipped counts the ignored files and directories the walk passed.
	skipped int
}

// loadIgnores prepares the ignore rules of a walk of walkDir (symlinks
// resolved) in a session whose working directory is cwd.
func loadIgnores(cwd, walkDir string) *ignores {
	ig := &ignores{walkDir: walkDir, inDir: map[string][]gitignore.Pattern{}}
	base := walkDir
	repo, gitDir := findRepo(walkDir)
	switch {
	case repo != "":
		base = repo
	default:
		if real, err := filepath.EvalSymlinks(cwd); err == nil && within(real, walkDir) {
			base = real
		}
	}
	ig.rootParts = splitRel(base, walkDir)
	if gitDir != "" {
		ig.outer = readIgnoreFile(filepath.Join(gitDir, "info", "exclude"), nil)
	}
	for i := range ig.rootParts {
		dir := filepath.Join(append([]string{base}, ig.rootParts[:i]...)...)
		ig.outer = append(ig.outer, readIgnoreFile(filepath.Join(dir, ignoreFile), ig.rootParts[:i])...)
	}
	ig.outer = slices.DeleteFunc(ig.outer, func(p gitignore.Pattern) bool {
		for i := 1; i <= len(ig.rootParts); i++ {
			if p.Match(ig.rootParts[:i], true) != gitignore.NoMatch {
				return true
			}
		}
		return false
	})
	return ig
}

// enter reads the ignore file of dir, which the walk is about to descend
// into; its rules apply to dir's entries and below.
func (ig *ignores) enter(dir string) {
	inherited := ig.outer
	if dir != ig.walkDir {
		inherited = ig.inDir[filepath.Dir(dir)]
	}
	own := readIgnoreFile(filepath.Join(dir, ignoreFile), ig.parts(dir))
	if len(own) == 0 {
		ig.inDir[dir] = inherited
		return
	}
	ig.inDir[dir] = append(slices.Clip(inherited), own...)
}

// ignored reports whether the entry at path (below walkDir, in a
// directory already entered) is ignored.
func (ig *ignores) ignored(path string, isDir bool) bool {
	rules := ig.inDir[filepath.Dir(path)]
	if len(rules) == 0 {
		return false
	}
	parts := ig.parts(path)
	for i := len(rules) - 1; i >= 0; i-- {
		switch rules[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// skippedNote tells the model, when a search found nothing, that ignored
// entries were passed over and how to include them.
func (ig *ignores) skippedNote() string {
	if ig == nil || ig.skipped == 0 {
		return ""
	}
	return fmt.Sprintf("\n[Skipped as ignored by .gitignore or .git/info/exclude: %d files or directories; set include_ignored to search them too.]", ig.skipped)
}

// parts is path (walkDir or below) as components from the domain base.
func (ig *ignores) parts(path string) []string {
	rel := strings.TrimLeft(strings.TrimPrefix(path, ig.walkDir), string(filepath.Separator))
	parts := slices.Clip(ig.rootParts)
	if rel == "" {
		return parts
	}
	return append(parts, strings.Split(filepath.ToSlash(rel), "/")...)
}

// maxIgnoreFile bounds how much of one ignore file is read.
const maxIgnoreFile = 1 << 20

// readIgnoreFile parses one ignore file whose rules apply below domain;
// a missing or unreadable file has no rules. Only a regular file is read
// (git does not follow a symlinked .gitignore; a FIFO would block).
func readIgnoreFile(path string, domain []string) []gitignore.Pattern {
	if info, err := os.Lstat(path); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxIgnoreFile)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// findRepo returns the nearest directory at or above dir holding a .git
// entry, and the git directory whose info/exclude applies ("" when a
// .git file cannot be followed).
func findRepo(dir string) (repo, gitDir string) {
	for d := dir; ; {
		dotGit := filepath.Join(d, ".git")
		if info, err := os.Lstat(dotGit); err == nil {
			if info.IsDir() {
				return d, dotGit
			}
			return d, linkedGitDir(d, dotGit)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

// linkedGitDir follows a .git file ("gitdir: <path>", as in a linked
// worktree or submodule) to the directory holding info/exclude: the
// common directory when the git directory names one.
func linkedGitDir(repo, dotGit string) string {
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repo, dir)
	}
	if common, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		return c
	}
	return dir
}

// within reports whether path is dir or lies below it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// splitRel returns path relative to base as components (none when equal).
func splitRel(base, path string) []string {
	rel, err := filepath.Rel(base, path)
	if err != nil || rel == "." {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}
