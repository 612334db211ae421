package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// protectedNames are the directory entries a sandboxed command sees
// read-only wherever they lie under a writable root: git's directory (a
// hook or core.fsmonitor planted there runs unsandboxed on the next git
// command), the agent's project settings and the editors' task, launch
// and settings directories (the editor runs what they say).
var protectedNames = map[string]bool{".git": true, ".acp-agent": true, ".vscode": true, ".zed": true, ".idea": true}

// maxProtectWalk bounds the entries looked at to find protected paths
// under one writable root; past it the command is refused rather than
// run with some .git left writable.
const maxProtectWalk = 200_000

// protectedUnder lists the existing protected paths under the writable
// roots, plus the extra paths (the agent's own settings file and data
// directory) that lie under one of them. It does not follow symlinks (a
// bind mount is made on the real path, which the walk reaches itself
// when it is under a root). ok is false when a walk hit its bound.
func protectedUnder(roots, extra []string) (paths []string, ok bool) {
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
			if protectedNames[strings.ToLower(d.Name())] && p != root {
				add(p)
				if d.IsDir() {
					return filepath.SkipDir
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
	return paths, ok
}
