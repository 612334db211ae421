package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolvePath(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "proj")
	outside := filepath.Join(base, "other")
	for _, d := range []string{filepath.Join(cwd, "src"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustLink := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(cwd, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(outside, "out-dir")
	mustLink(filepath.Join(outside, "f.txt"), "out-file")     // dangling until created below
	mustLink(filepath.Join(cwd, "src"), "in-dir")             // inside to inside
	mustLink(filepath.Join(base, "missing", "x"), "dangling") // a create would follow it
	mustLink(filepath.Join("..", "other"), "relative-out")    // relative target
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	linkedCwd := filepath.Join(base, "proj-link")
	if err := os.Symlink(cwd, linkedCwd); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cwd     string
		path    string
		abs     string
		outside bool
	}{
		{"relative", cwd, "src/a.go", filepath.Join(cwd, "src/a.go"), false},
		{"cwd itself", cwd, ".", cwd, false},
		{"new nested file", cwd, "new/dir/a.go", filepath.Join(cwd, "new/dir/a.go"), false},
		{"dotdot staying inside", cwd, "src/../b.go", filepath.Join(cwd, "b.go"), false},
		{"dotdot escaping", cwd, "../other/f.txt", filepath.Join(outside, "f.txt"), true},
		{"dotdot through a missing dir", cwd, "nope/../../other/x", filepath.Join(outside, "x"), true},
		{"sibling with a shared prefix", cwd, "../proj-evil/x", filepath.Join(base, "proj-evil/x"), true},
		{"absolute inside", cwd, filepath.Join(cwd, "src"), filepath.Join(cwd, "src"), false},
		{"absolute outside", cwd, "/etc/passwd", "/etc/passwd", true},
		{"symlinked dir escaping", cwd, "out-dir/f.txt", filepath.Join(cwd, "out-dir/f.txt"), true},
		{"symlinked dir, new file", cwd, "out-dir/new/x.txt", filepath.Join(cwd, "out-dir/new/x.txt"), true},
		{"symlinked file escaping", cwd, "out-file", filepath.Join(cwd, "out-file"), true},
		{"relative symlink escaping", cwd, "relative-out/f.txt", filepath.Join(cwd, "relative-out/f.txt"), true},
		{"symlink inside", cwd, "in-dir/a.go", filepath.Join(cwd, "in-dir/a.go"), false},
		{"dangling symlink", cwd, "dangling", filepath.Join(cwd, "dangling"), true},
		{"cwd reached through a symlink", linkedCwd, "src/a.go", filepath.Join(linkedCwd, "src/a.go"), false},
		{"real path of a symlinked cwd", linkedCwd, filepath.Join(cwd, "src"), filepath.Join(cwd, "src"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePath(tt.cwd, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Abs != tt.abs || got.OutsideCwd != tt.outside {
				t.Fatalf("got %+v, want abs %s outside %v", got, tt.abs, tt.outside)
			}
		})
	}
	for _, bad := range []string{"", "  ", "a\x00b"} {
		if _, err := ResolvePath(cwd, bad); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
	if _, err := ResolvePath("relative/cwd", "a"); err == nil {
		t.Error("relative cwd accepted")
	}
}

func TestDisplayPath(t *testing.T) {
	for _, tt := range []struct{ cwd, abs, want string }{
		{"/p", "/p/a/b.go", "a/b.go"},
		{"/p", "/p", "."},
		{"/p", "/pq/x", "/pq/x"},
		{"/", "/x", "x"},
	} {
		if got := DisplayPath(tt.cwd, tt.abs); got != tt.want {
			t.Errorf("DisplayPath(%s, %s) = %s, want %s", tt.cwd, tt.abs, got, tt.want)
		}
	}
}
