package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A repository planted outside the guarded roots and linked in: a
// sandboxed command may write the temp dir, so it can make
// $TMPDIR/x/.git with a core.fsmonitor (or a hook, or a filter) and a
// symlink sub -> $TMPDIR/x in the working directory. The walk does not
// follow symlinks, so it never sees that .git; git does when someone
// works in sub (the person's shell, an editor that opens the folder). So
// the guard takes such a link for a protected path: a symlink under a
// guarded root that leads to a directory outside every guarded root and
// holding a repository. New ones are moved aside like a new .git (the
// link itself is renamed; what it points to is not touched).

// plantScope finds planted links during a walk. A nil *plantScope finds
// none.
type plantScope struct {
	// guarded are the roots, as walked, whose links are looked at (not
	// the temp dir: it is shared with every program of the user, and
	// what links there is not the working directory's).
	guarded map[string]bool
	// inside are the guarded roots with symlinks resolved: a link to a
	// place under one of them leads to what the walk reaches itself.
	inside []string
	// temp is the temp dir with symlinks resolved ("" when unknown): a
	// link into it is also checked for a repository above its target, up
	// to the temp dir, since the command may have made one there too.
	temp string
	// found are the planted links, by path.
	found map[string]linkKey
}

// linkKey is what makes a planted link the one that was there before the
// command: the same link to the same repository. A link that was there
// before but whose target gained a repository meanwhile is new.
type linkKey struct{ link, repo fileID }

func newPlantScope(roots []string, temp string) *plantScope {
	s := &plantScope{guarded: make(map[string]bool, len(roots)), found: map[string]linkKey{}}
	for _, r := range roots {
		s.guarded[r] = true
		s.inside = append(s.inside, resolved(r))
	}
	if temp != "" {
		s.temp = resolved(temp)
	}
	return s
}

// resolved is p with symlinks evaluated, or p cleaned when that fails.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// under reports whether p is dir or lies beneath it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// look records p, a symlink met while walking root, when it is planted.
func (s *plantScope) look(root, p string) {
	if s == nil || !s.guarded[root] {
		return
	}
	if key, ok := s.plantedRepo(p); ok {
		s.found[p] = key
	}
}

// plantedRepo reports whether the symlink p leads to a directory outside
// every guarded root that holds a repository (see repoAt), or, when that
// directory is in the temp dir, one of whose parents up to the temp dir
// does (cd sub && git status finds a .git above it).
func (s *plantScope) plantedRepo(p string) (linkKey, bool) {
	target, ok := realDir(p)
	if !ok {
		return linkKey{}, false
	}
	for _, in := range s.inside {
		if under(target, in) {
			return linkKey{}, false // the walk reaches its .git itself
		}
	}
	for dir := target; ; dir = filepath.Dir(dir) {
		if repo, ok := repoAt(dir); ok {
			link, ok := idOf(p)
			return linkKey{link, repo}, ok
		}
		if s.temp == "" || dir == s.temp || !under(dir, s.temp) {
			return linkKey{}, false
		}
	}
}

// realDir is the directory p leads to, with every symlink resolved; ok
// is false when p leads to no directory (a file, nothing). The kernel
// resolves it in one open: a walk meets many links (a pnpm tree holds
// one per dependency), and filepath.EvalSymlinks costs a stat for every
// component of the path; it is the fallback where /proc is missing.
func realDir(p string) (string, bool) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	if r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && filepath.IsAbs(r) {
		return r, true
	}
	r, err := filepath.EvalSymlinks(p)
	return r, err == nil
}

// repoAt reports whether git finds a repository at dir: a .git entry
// (a directory, or a file or symlink naming one elsewhere), or dir being
// a git directory itself (a bare repository: HEAD, objects/, refs/). It
// returns the identity of that entry.
func repoAt(dir string) (fileID, bool) {
	if id, ok := idOf(filepath.Join(dir, ".git")); ok {
		return id, true
	}
	head, err := os.Lstat(filepath.Join(dir, "HEAD"))
	if err != nil || !head.Mode().IsRegular() {
		return fileID{}, false
	}
	for _, d := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			return fileID{}, false
		}
	}
	return idOf(dir)
}
