package projcache

// This file defines how the cache touches its files: never through a
// symlink, and temp files left by a crash are removed when it opens.

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// readNoFollow reads the regular file at path. A symlink in its place is
// refused (ELOOP), never followed: a link planted in the cache directory
// must not make it read a file elsewhere. O_NONBLOCK keeps a FIFO from
// blocking the reader.
func readNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EINVAL}
	}
	// One buffer of the stat's size (io.ReadAll would grow one by
	// doubling: the index is megabytes), read on if the file grew.
	buf := make([]byte, 0, st.Size()+1)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// tmpGrace is how old a temp file must be before Open removes it: a
// writer in another process may be between CreateTemp and Rename, which
// takes far less than this.
const tmpGrace = time.Minute

// removeTempLeftovers deletes the dot-named ".*.tmp" files a crash between
// writing and renaming a row or the index left in dir. Rows are rebuilt
// from the logs, so a removed temp file costs nothing; a recent one may
// still be in use by another process and is left.
func removeTempLeftovers(dir string, now time.Time) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, name := range names {
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".tmp") {
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Lstat(p)
		if err != nil || st.IsDir() || now.Sub(st.ModTime()) < tmpGrace {
			continue
		}
		os.Remove(p)
	}
}
