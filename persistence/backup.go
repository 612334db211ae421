package persistence

// This file defines the backup kept before a session log is cut: the
// torn-tail repair at load and `sessions repair` both keep what they
// remove in a .broken file that never overwrites an earlier one and is
// durable before the log changes.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// FaultBackup is the storage step after a backup is written, before its
// fsync (crash and fault tests).
const FaultBackup FaultPoint = "backup"

// BackupError reports that the backup of bytes about to be cut from a log
// could not be kept; the log was left as it was.
type BackupError struct {
	ID   string
	Path string // the backup file tried
	Err  error
}

func (e *BackupError) Error() string {
	return fmt.Sprintf("persistence: session %s: cannot keep a backup in %s before cutting the log (the log is left as it was): %v", e.ID, e.Path, e.Err)
}

func (e *BackupError) Unwrap() error { return e.Err }

// keepBackup writes data to a new file beside path, <path>.broken, or
// <path>.broken.N for the first N free, and makes it durable (the file,
// then the directory entry) before returning its name. It never replaces
// or follows an existing file (O_EXCL|O_NOFOLLOW). Any failure is a
// *BackupError and the partial backup is removed: the caller must then
// leave the log as it is.
func (s *Store) keepBackup(id, path string, data []byte) (string, error) {
	var f *os.File
	name := path + ".broken"
	for n := 1; ; n++ {
		var err error
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return "", &BackupError{ID: id, Path: name, Err: err}
		}
		name = path + ".broken." + strconv.Itoa(n)
	}
	_, err := f.Write(data)
	if err == nil {
		s.hit(FaultBackup)
		if s.faultErr != nil {
			err = s.faultErr(FaultBackup)
		}
	}
	if err == nil {
		if !s.noSync {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		os.Remove(name)
		return "", &BackupError{ID: id, Path: name, Err: err}
	}
	return name, nil
}
