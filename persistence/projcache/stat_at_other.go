//go:build !linux || !(amd64 || arm64)

package projcache

import (
	"os"
	"path/filepath"
)

// statLogAt is statLog of name in the directory dirPath.
func statLogAt(_ *os.File, dirPath, name string) (witness, bool, error) {
	return statLog(filepath.Join(dirPath, name))
}
