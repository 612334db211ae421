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
)

// FaultBackup is the storage step after a backup is written to its
// temporary file and fsynced, before it gets its real name (crash and
// fault tests).
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

// keepBackup keeps data in a new file beside path, <path>.broken, or
// <path>.broken.N for the first N free: written to a temp file and
// fsynced, then linked to the real name (which never replaces an
// existing file), the temp removed and the directory fsynced, so a file
// under a backup's name is always whole. Any failure is a *BackupError
// and leaves no file under the real name: the caller must then leave the
// log as it is.
func (s *Store) keepBackup(id, path string, data []byte) (string, error) {
	tmp, err := s.writeTemp(path, backupTemp, data, FaultRepairBackup)
	if err == nil {
		s.hit(FaultBackup)
		if s.faultErr != nil {
			err = s.faultErr(FaultBackup)
		}
		if err != nil {
			os.Remove(tmp)
		}
	}
	if err != nil {
		return "", &BackupError{ID: id, Path: path + ".broken", Err: err}
	}
	defer os.Remove(tmp)
	name := path + ".broken"
	for n := 1; ; n++ {
		err := os.Link(tmp, name)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return "", &BackupError{ID: id, Path: name, Err: err}
		}
		name = path + ".broken." + strconv.Itoa(n)
	}
	err = s.step(FaultRepairBackupNamed)
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		os.Remove(name)
		return "", &BackupError{ID: id, Path: name, Err: err}
	}
	return name, nil
}
