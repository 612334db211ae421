//go:build !unix

package persistence

import (
	"errors"
	"os"
)

// errWouldBlock is never returned where flock does not exist.
var errWouldBlock = errors.New("persistence: lock would block")

// tryLock is a no-op outside Unix: the single-writer guarantee across
// processes holds only where flock(2) exists (Linux, macOS, the BSDs).
func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }

func tryShared(*os.File) error { return nil }
