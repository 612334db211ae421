//go:build unix

package projcache

import (
	"os"
	"syscall"
)

// inode returns the file's inode number, part of the witness: a log
// replaced under the same name usually gets another one.
func inode(st os.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}
