package persistence

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSpecialFilesNeverBlock: Inspect, Load and List on a FIFO, a
// directory or a device in place of a session file return at once with
// an *UnreadableError saying what is there.
func TestSpecialFilesNeverBlock(t *testing.T) {
	tests := []struct {
		name    string
		make    func(path string) error
		problem string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, ProblemNamedPipe},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, ProblemDirectory},
		{"device", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) }, ProblemDevice},
		// A symlink is refused whatever it points to, never followed.
		{"symlink to a device", func(p string) error { return os.Symlink("/dev/null", p) }, ProblemSymlink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ps := openStore(t, dir)
			if err := tt.make(filepath.Join(ps.Dir(), "x.jsonl")); err != nil {
				if errors.Is(err, syscall.EPERM) {
					t.Skipf("cannot make it here: %v", err)
				}
				t.Fatal(err)
			}
			_, err := ps.Inspect(t.Context(), "x")
			var ue *UnreadableError
			if !errors.As(err, &ue) || ue.Problem != tt.problem || !errors.Is(err, ErrUnreadable) {
				t.Errorf("Inspect: %v, want problem %q", err, tt.problem)
			}
			_, err = ps.Load(t.Context(), "x")
			if !errors.As(err, &ue) || ue.Problem != tt.problem {
				t.Errorf("Load: %v, want problem %q", err, tt.problem)
			}
			entries, bad, err := ps.Scan(t.Context())
			if err != nil || len(entries) != 0 || len(bad) != 1 || bad[0].ID != "x" || bad[0].Problem != tt.problem {
				t.Errorf("Scan = %v, %+v, %v", entries, bad, err)
			}
		})
	}
}

// TestTempLeftovers: an unlocked temp file is a crash leftover removed at
// Open; a locked one belongs to a creator at work and stays.
func TestTempLeftovers(t *testing.T) {
	dir := t.TempDir()
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(sdir, ".a.00.tmp")
	busy := filepath.Join(sdir, ".b.00.tmp")
	for _, p := range []string{leftover, busy} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		t.Fatal(err)
	}
	openStore(t, dir)
	if _, err := os.Lstat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover temp file not removed: %v", err)
	}
	if _, err := os.Lstat(busy); err != nil {
		t.Errorf("locked temp file removed: %v", err)
	}
}

// TestLoadWithFIFOAsBrokenCopy: cutting a torn tail does not block on a
// FIFO planted where the torn bytes are kept.
func TestLoadWithFIFOAsBrokenCopy(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeSession(t, dir, "s1", nil)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"turn/st`)
	f.Close()
	if err := syscall.Mkfifo(path+".broken", 0o600); err != nil {
		t.Fatal(err)
	}
	ps := openStore(t, dir)
	snap, err := ps.Load(t.Context(), "s1")
	if err != nil || !snap.Torn {
		t.Fatalf("Load = torn %v, %v", snap.Torn, err)
	}
}

// TestSymlinkedSessionNeverFollowed: a symlink in sessions/ to a valid
// session log outside the data directory (torn, so a Load would cut and
// append) is refused as "symlink" by Inspect, Load, Scan and Append, and
// the file it points to is left byte for byte as it was.
func TestSymlinkedSessionNeverFollowed(t *testing.T) {
	outside := t.TempDir()
	target, _ := writeSession(t, outside, "s1", nil)
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"turn/st`)
	f.Close()
	before := readBytes(t, target)

	ps := openStore(t, t.TempDir())
	if err := os.Symlink(target, filepath.Join(ps.Dir(), "s1.jsonl")); err != nil {
		t.Fatal(err)
	}
	var ue *UnreadableError
	if _, err := ps.Inspect(t.Context(), "s1"); !errors.As(err, &ue) || ue.Problem != ProblemSymlink {
		t.Errorf("Inspect: %v, want problem %q", err, ProblemSymlink)
	}
	if _, err := ps.Load(t.Context(), "s1"); !errors.As(err, &ue) || ue.Problem != ProblemSymlink {
		t.Errorf("Load: %v, want problem %q", err, ProblemSymlink)
	}
	if _, bad, err := ps.Scan(t.Context()); err != nil || len(bad) != 1 || bad[0].Problem != ProblemSymlink {
		t.Errorf("Scan = %+v, %v", bad, err)
	}
	if err := ps.Append(t.Context(), "s1", nil); err == nil {
		t.Errorf("Append to a symlinked session succeeded")
	}
	if b := readBytes(t, target); !bytes.Equal(b, before) {
		t.Errorf("the symlink's target was changed")
	}
	if _, err := os.Lstat(target + ".broken"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a backup was written beside the target")
	}
}

// TestOpenProblemKeepsCause: an open failure a person can act on keeps its
// cause in the row's problem (tests run as root, so the errors are made
// rather than provoked).
func TestOpenProblemKeepsCause(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: "/d/s.jsonl", Err: syscall.EACCES}, "cannot be opened: permission denied"},
		{&os.PathError{Op: "open", Path: "/d/s.jsonl", Err: syscall.EROFS}, "cannot be opened: read-only file system"},
		{&os.PathError{Op: "open", Path: "/d/s.jsonl", Err: syscall.ENOSPC}, "cannot be opened: no space left on device"},
		{&os.PathError{Op: "open", Path: "/d/s.jsonl", Err: syscall.ENXIO}, ProblemUnreachable},
	}
	for _, tt := range tests {
		if got := openProblem(tt.err); got != tt.want {
			t.Errorf("openProblem(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
