//go:build !unix

package workspace

import "io/fs"

func linkCount(fs.FileInfo) uint64 { return 1 }

func devIno(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
