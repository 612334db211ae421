//go:build !unix

package projcache

import "os"

// inode is not available here: the witness is size and time only.
func inode(os.FileInfo) uint64 { return 0 }
