package benchtree

import (
	"fmt"
	"os"
	"path/filepath"
)

// GlobPattern matches every file Paths writes, and nothing else of it.
const GlobPattern = "**/*.go"

// Paths writes n small Go files into dir, twenty a directory
// (d000/f00.go, …), for a glob that returns exactly n paths. It returns
// the files' paths relative to dir, in the sorted order glob lists them.
func Paths(dir string, n int) ([]string, error) {
	rel := make([]string, 0, n)
	for i := range n {
		d := fmt.Sprintf("d%03d", i/20)
		if i%20 == 0 {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				return nil, err
			}
		}
		r := filepath.Join(d, fmt.Sprintf("f%02d.go", i%20))
		if err := os.WriteFile(filepath.Join(dir, r), fmt.Appendf(nil, "package d\n\nconst c%d = %d\n", i, i), 0o644); err != nil {
			return nil, err
		}
		rel = append(rel, r)
	}
	return rel, nil
}
