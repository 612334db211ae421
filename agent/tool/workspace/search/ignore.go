package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ignoreFile is the per-directory ignore file the walk honours.
const ignoreFile = ".gitignore"

// ignores are the git ignore rules one walk honours, with git's
// precedence from lowest to highest: the global excludes file
// (core.excludesFile), .git/info/exclude of the repository, then the
// .gitignore files from the repository root down, each applying to its
// own subtree. Each ignore file is parsed and compiled once (ruleSet);
// a directory's rules are a chain of compiled layers shared with its
// parent (ignoreLayer), so deciding an entry costs a few map lookups per
// layer, not one match per pattern.
//
// A directory named as the search root is searched even when ignored (as
// ripgrep does): rules from above the root that match the root or one of
// its ancestors are dropped, so they do not hide the root's contents.
type ignores struct {
	walkDir string
	// rootRel is walkDir relative to the directory pattern domains
	// start from (the repository root, else the cwd, else walkDir
	// itself), slash-separated, "" when they are the same.
	rootRel string
	// outer are the rules in force at walkDir from above it.
	outer *ignoreLayer
	// skipped counts the ignored files and directories the walk passed.
	skipped int
}

// ignoreLayer is one compiled ignore file on top of the layers of the
// directories above it.
type ignoreLayer struct {
	rules  *ruleSet
	parent *ignoreLayer
	// anchored is set when this or a lower layer has anchored rules,
	// which need the entry's path and not only its name.
	anchored bool
}

// push returns the layer of rs over l (l itself when rs is nil).
func (l *ignoreLayer) push(rs *ruleSet) *ignoreLayer {
	if rs == nil {
		return l
	}
	return &ignoreLayer{rules: rs, parent: l, anchored: rs.anchored || (l != nil && l.anchored)}
}

// ignored reports whether the entry name in the directory dirRel
// (relative to the domain root) is ignored: the innermost layer with a
// matching rule decides, by its last matching rule.
func (l *ignoreLayer) ignored(dirRel, name string, isDir bool) bool {
	rel := ""
	if l.anchored {
		rel = joinRel(dirRel, name)
	}
	for x := l; x != nil; x = x.parent {
		sub := ""
		if x.rules.anchored {
			sub = relBelow(x.rules.base, rel)
		}
		if i := x.rules.match(name, sub, isDir); i >= 0 {
			return !x.rules.rules[i].negate
		}
	}
	return false
}

// loadIgnores prepares the ignore rules of a walk of walkDir (symlinks
// resolved) in a session whose working directory is cwd.
func loadIgnores(cwd, walkDir string) *ignores {
	return loadIgnoresEnv(cwd, walkDir, os.Getenv)
}

// loadIgnoresEnv is loadIgnores reading the environment (for git's
// config files) with getenv.
func loadIgnoresEnv(cwd, walkDir string, getenv func(string) string) *ignores {
	ig := &ignores{walkDir: walkDir}
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
	rootParts := splitRel(base, walkDir)
	ig.rootRel = strings.Join(rootParts, "/")
	// keep drops a rule of the file in domain dir that matches walkDir
	// or one of its ancestors below dir.
	keep := func(dir string) func(ignoreRule) bool {
		return func(r ignoreRule) bool {
			for i := 1; i <= len(rootParts); i++ {
				rel := strings.Join(rootParts[:i], "/")
				if dir != "" && !strings.HasPrefix(rel, dir+"/") {
					continue
				}
				if ruleMatches(r, rootParts[i-1], relBelow(dir, rel), true) {
					return false
				}
			}
			return true
		}
	}
	outer := func(rs *ruleSet) {
		if rs != nil {
			ig.outer = ig.outer.push(rs.filtered(keep(rs.base)))
		}
	}
	if repo != "" {
		if global := globalExcludesFile(gitDir, getenv); global != "" {
			outer(readIgnoreFile(global, "", true))
		}
	}
	if gitDir != "" {
		outer(readIgnoreFile(filepath.Join(gitDir, "info", "exclude"), "", true))
	}
	for i := range rootParts {
		dir := filepath.Join(append([]string{base}, rootParts[:i]...)...)
		outer(readIgnoreFile(filepath.Join(dir, ignoreFile), strings.Join(rootParts[:i], "/"), false))
	}
	return ig
}

// ruleMatches reports whether the single rule r matches the entry name
// at rel (relative to the rule's directory).
func ruleMatches(r ignoreRule, name, rel string, isDir bool) bool {
	return compileRules("", []ignoreRule{r}).match(name, rel, isDir) == 0
}

// skippedNote tells the model, when a search found nothing, that ignored
// entries were passed over and how to include them.
func (ig *ignores) skippedNote() string {
	if ig == nil || ig.skipped == 0 {
		return ""
	}
	return fmt.Sprintf("\n[Skipped as ignored by .gitignore or .git/info/exclude: %d files or directories; set include_ignored to search them too.]", ig.skipped)
}

// maxIgnoreFile bounds how much of one ignore file is read.
const maxIgnoreFile = 1 << 20

// readIgnoreFile parses and compiles one ignore file whose rules apply
// below the domain-relative directory base; a missing, unreadable or
// empty file has no rules (nil). Only a regular file is read (a FIFO
// would block); a symlink only when follow is set (git does not follow
// a symlinked .gitignore).
func readIgnoreFile(path, base string, follow bool) *ruleSet {
	data, err := readRegular(path, maxIgnoreFile, follow)
	if err != nil {
		return nil
	}
	var rules []ignoreRule
	// Split, not a bufio.Scanner: its 4 KiB buffer per file was most of
	// what honouring nested ignore files allocated.
	for line := range strings.SplitSeq(string(data), "\n") {
		if r, ok := parseIgnoreLine(line); ok {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return compileRules(base, rules)
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

// joinRel joins a slash-separated relative directory and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// relBelow returns rel (below base, both slash-separated and relative to
// the same root) relative to base.
func relBelow(base, rel string) string {
	if base == "" {
		return rel
	}
	return strings.TrimPrefix(rel[min(len(base), len(rel)):], "/")
}
