package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/acp-agent/acp-agent/agent/policy"
)

// The directory entries a sandboxed command sees read-only wherever they
// lie under a writable root are the one protected set of agent/policy
// (policy.ProtectedEntry): git's directory (a hook or core.fsmonitor
// planted there runs unsandboxed on the next git command), the agent's
// own and other agents' configuration, agent definition and skill
// folders, and the editors' task, launch and settings directories.

// maxProtectWalk bounds the entries looked at to find protected paths
// under one writable root; past it the command is refused rather than
// run with some .git left writable. A variable for the tests only.
var maxProtectWalk = 200_000

// maxLinkedBinds bounds the hard-linked files kept read-only for one
// command (a bind mount each); past it the rest stay writable and the
// limit is documented (a package manager's store linked into
// node_modules holds tens of thousands).
const maxLinkedBinds = 4096

// walkProtected lists the existing protected paths under the writable
// roots, plus the extra paths (the agent's own settings file and data
// directory) that lie under one of them. It does not follow symlinks (a
// bind mount is made on the real path, which the walk reaches itself
// when it is under a root). ok is false when a walk hit its bound.
//
// With links, it also lists the regular files with more than one hard
// link under the roots: another of their names may be outside, where the
// command must not write (Landlock checks the name used, not the inode).
// With plant, the symlinks met are given to it (planted.go), which keeps
// those leading to a repository outside.
func walkProtected(roots, extra []string, links bool, plant *plantScope) (paths, linked []string, ok bool) {
	ok = true
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, root := range roots {
		n := 0
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if n++; n > maxProtectWalk {
				ok = false
				return filepath.SkipAll
			}
			if p != root && policy.ProtectedEntry(filepath.Base(filepath.Dir(p)), d.Name()) {
				add(p)
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				plant.look(root, p)
			}
			if links && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					if st, isSys := info.Sys().(*syscall.Stat_t); isSys && st.Nlink > 1 {
						linked = append(linked, p)
					}
				}
			}
			return nil
		})
	}
	for _, e := range extra {
		if e == "" {
			continue
		}
		if _, err := os.Lstat(e); err != nil {
			continue
		}
		for _, root := range roots {
			if e == root || strings.HasPrefix(e, root+string(filepath.Separator)) {
				add(e)
			}
		}
	}
	return paths, linked, ok
}
