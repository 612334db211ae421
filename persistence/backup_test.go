package persistence

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// tornSession writes session s1 with one complete turn and appends a torn
// line; it returns the log path, the valid prefix and the torn bytes.
func tornSession(t *testing.T, dir, torn string) (path string, good []byte) {
	t.Helper()
	path, _ = writeSession(t, dir, "s1", nil)
	good = readBytes(t, path)
	writeBytes(t, path, append(append([]byte(nil), good...), torn...))
	return path, good
}

// TestTornTailBackupOrder: the torn bytes are in the backup, and the
// backup is fsynced, before the log is cut; a second torn tail gets a new
// backup name and the first backup is kept.
func TestTornTailBackupOrder(t *testing.T) {
	dir := t.TempDir()
	path, good := tornSession(t, dir, `{"type":"turn/st`)
	var steps []string
	var atBackup struct {
		logSize int64
		backup  []byte
	}
	ps, err := Open(dir, Options{Logger: testLogger(t), Fault: func(p FaultPoint) {
		steps = append(steps, string(p))
		if p == FaultBackup && atBackup.backup == nil {
			// The first backup is written and fsynced under a temp name:
			// nothing yet under its real name.
			if _, err := os.Stat(path + ".broken"); err == nil {
				t.Error("backup under its real name before it was whole and durable")
			}
		}
		if p == FaultRepairBackupNamed {
			st, err := os.Stat(path)
			if err != nil {
				t.Error(err)
				return
			}
			atBackup.logSize = st.Size()
			atBackup.backup, _ = os.ReadFile(path + ".broken")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	snap, err := ps.Load(t.Context(), "s1")
	if err != nil || !snap.Torn {
		t.Fatalf("Load = torn %v, %v", snap.Torn, err)
	}
	if atBackup.logSize != int64(len(good))+int64(len(`{"type":"turn/st`)) {
		t.Errorf("log was %d bytes when the backup was written, want the uncut %d", atBackup.logSize, len(good)+16)
	}
	if string(atBackup.backup) != `{"type":"turn/st` {
		t.Errorf("backup once named holds %q", atBackup.backup)
	}
	// backup written → its fsync (inside keepBackup) → the log's fsync
	// after the cut: FaultBackup comes before the log's FaultFsync.
	if i := indexOf(steps, "backup"); i < 0 || indexOf(steps[i:], "fsync") < 0 {
		t.Errorf("storage steps %v: want backup, then the log's fsync", steps)
	}
	if b := readBytes(t, path); !bytes.HasPrefix(b, good) {
		t.Errorf("valid part of the log changed")
	}
	if err := ps.Release("s1"); err != nil {
		t.Fatal(err)
	}
	// A second torn tail: a new backup, the first one untouched.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"second":`)
	f.Close()
	if _, err := ps.Load(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if b := readBytes(t, path+".broken"); string(b) != `{"type":"turn/st` {
		t.Errorf("first backup now holds %q", b)
	}
	if b := readBytes(t, path+".broken.1"); string(b) != `{"second":` {
		t.Errorf("second backup holds %q", b)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestTornTailBackupFailureStopsRepair: when the backup cannot be kept,
// Load fails with *BackupError naming the backup path, the log is left
// byte for byte as it was, and no partial backup remains.
func TestTornTailBackupFailureStopsRepair(t *testing.T) {
	dir := t.TempDir()
	path, good := tornSession(t, dir, `{"type":"turn/st`)
	before := readBytes(t, path)
	noSpace := errors.New("no space left on device")
	ps, err := Open(dir, Options{Logger: testLogger(t), FaultErr: func(p FaultPoint) error {
		if p == FaultBackup {
			return noSpace
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	_, err = ps.Load(t.Context(), "s1")
	var be *BackupError
	if !errors.As(err, &be) || !errors.Is(err, noSpace) || be.Path != path+".broken" {
		t.Fatalf("Load = %v, want *BackupError for %s wrapping the cause", err, path+".broken")
	}
	if b := readBytes(t, path); !bytes.Equal(b, before) || len(b) <= len(good) {
		t.Errorf("log changed although the backup failed")
	}
	if _, err := os.Lstat(path + ".broken"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial backup left: %v", err)
	}
	// The session is not held: a later Load (disk fixed) repairs it.
	ps2, err := Open(dir, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ps2.Close()
	ps.Close()
	if snap, err := ps2.Load(t.Context(), "s1"); err != nil || !snap.Torn {
		t.Errorf("Load after the fault = torn %v, %v", snap.Torn, err)
	}
}
