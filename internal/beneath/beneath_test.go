package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/internal/ownpaths"
)

// layout makes root/ with a file, a symlink inside, a symlink outside and
// a ".." path, plus outside/secret.
func layout(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "sub", "in.txt"), "in")
	write(t, filepath.Join(outside, "secret"), "secret")
	must(t, os.Symlink("sub/in.txt", filepath.Join(root, "inlink")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "outlink")))
	must(t, os.Symlink(outside, filepath.Join(root, "outdir")))
	return root, outside
}

func write(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadFileStaysBeneath(t *testing.T) {
	root, outside := layout(t)
	tests := []struct {
		name, path string
		want       string
		code       Code
	}{
		{"plain", "sub/in.txt", "in", ""},
		{"absolute inside", filepath.Join(root, "sub/in.txt"), "in", ""},
		{"symlink inside", "inlink", "in", ""},
		{"symlink outside", "outlink", "", CodeLeavesRoot},
		{"through a symlinked dir", "outdir/secret", "", CodeLeavesRoot},
		{"dot dot", "../outside/secret", "", CodeLeavesRoot},
		{"absolute outside", filepath.Join(outside, "secret"), "", CodeLeavesRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(root, tt.path, 1<<10)
			if tt.code != "" {
				if !errcode.Has(err, tt.code) || !Leaves(err) {
					t.Fatalf("err = %v, want code %s", err, tt.code)
				}
				if got != nil {
					t.Fatalf("read %q through a refused path", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := ReadFile(root, "missing", 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
	if _, err := ReadFile(root, "sub/in.txt", 1); !errcode.Has(err, CodeTooLarge) {
		t.Fatalf("bound: %v", err)
	}
}

func TestRealDirsRefusesSymlinks(t *testing.T) {
	root, outside := layout(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()

	created, err := r.RealDirs(".acp-agent/worktrees", 0o755)
	must(t, err)
	if len(created) != 2 || created[1] != filepath.Join(root, ".acp-agent/worktrees") {
		t.Fatalf("created = %v", created)
	}
	if !ownpaths.Claimed(created[1]) {
		t.Fatal("a folder the agent made is not claimed as its own")
	}
	if _, err := r.RealDirs(".acp-agent/worktrees", 0o755); err != nil {
		t.Fatalf("existing real dirs: %v", err)
	}

	// A symlink, outside or inside, is refused and nothing is made
	// through it.
	must(t, os.Symlink(outside, filepath.Join(root, "linked")))
	must(t, os.Symlink("sub", filepath.Join(root, "inside")))
	for _, p := range []string{"linked/worktrees", "inside/worktrees", "sub/in.txt/x"} {
		if _, err := r.RealDirs(p, 0o755); !errcode.Has(err, CodeNotRealDir) {
			t.Errorf("RealDirs(%s) = %v, want %s", p, err, CodeNotRealDir)
		}
		if err := r.CheckRealDirs(p); !errcode.Has(err, CodeNotRealDir) {
			t.Errorf("CheckRealDirs(%s) = %v, want %s", p, err, CodeNotRealDir)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "worktrees")); err == nil {
		t.Fatal("a folder was made outside through the symlink")
	}
	// A partial creation is undone when a later component is refused.
	must(t, os.MkdirAll(filepath.Join(root, "a"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "a", "b")))
	if _, err := r.RealDirs("a/b/c", 0o755); err == nil {
		t.Fatal("a/b is a symlink, yet RealDirs passed")
	}
	if _, err := r.RealDirs("../x", 0o755); !errcode.Has(err, CodeLeavesRoot) {
		t.Fatalf("../x: %v", err)
	}
}

func TestWritesStayBeneath(t *testing.T) {
	root, outside := layout(t)
	r, err := Open(root)
	must(t, err)
	defer r.Close()
	if err := r.CreateExcl("outdir/planted", []byte("x"), 0o644); !errcode.Has(err, CodeLeavesRoot) {
		t.Fatalf("create through a symlinked dir: %v", err)
	}
	if err := r.CreateExcl("outlink", []byte("x"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over a symlink: %v", err)
	}
	if err := r.Remove("outdir/secret"); !errcode.Has(err, CodeLeavesRoot) {
		t.Fatalf("remove through a symlinked dir: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
		t.Fatalf("outside file changed: %q", b)
	}
	// An atomic write replaces a symlink at the name, never its target.
	must(t, r.WriteFileAtomic("outlink", []byte("new"), 0o600))
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "secret" {
		t.Fatalf("atomic write followed the symlink: outside now %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(root, "outlink")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("outlink after the write: %v %v", fi, err)
	}
	if err := r.WriteFileAtomic("outdir/x", []byte("new"), 0o600); !errcode.Has(err, CodeLeavesRoot) {
		t.Fatalf("atomic write through a symlinked dir: %v", err)
	}
}
