//go:build unix

package persistence

import (
	"errors"
	"os"
	"syscall"
)

// errWouldBlock is what tryLock returns when another open file holds the
// lock.
var errWouldBlock = syscall.EWOULDBLOCK

// tryLock takes an exclusive advisory flock on f without blocking. flock
// locks belong to the open file description, so two opens of one file in a
// single process exclude each other just as two processes do; the lock
// dies with the descriptor, so a crashed process never leaves it behind.
func tryLock(f *os.File) error {
	return flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlock releases the flock on f (closing f would too).
func unlock(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// tryShared takes a shared flock on f without blocking: errWouldBlock
// while a writer holds the exclusive lock.
func tryShared(f *os.File) error {
	return flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
}
