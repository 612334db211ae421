package levels

import (
	"path/filepath"
	"strings"
)

// Down lists root, its descendants on the way to cwd, and cwd, in that
// order (both cleaned). A cwd outside root, or no root, yields only cwd.
// It works on the paths as written: it resolves no symbolic link and
// reads no directory.
func Down(root, cwd string) []string {
	cwd = filepath.Clean(cwd)
	if root == "" {
		return []string{cwd}
	}
	root = filepath.Clean(root)
	rel, err := filepath.Rel(root, cwd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return []string{cwd}
	}
	dirs := []string{root}
	if rel == "." {
		return dirs
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		dirs = append(dirs, cur)
	}
	return dirs
}
