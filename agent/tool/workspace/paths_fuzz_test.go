package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolvePath checks the path rules on arbitrary model input against
// a cwd holding a plain directory and a symlink that leads out: every
// accepted path is clean and absolute, a path lexically outside the cwd
// is outside, and so is any path through the escaping symlink.
func FuzzResolvePath(f *testing.F) {
	base := f.TempDir()
	cwd := filepath.Join(base, "cwd")
	if err := os.MkdirAll(filepath.Join(cwd, "dir"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "other"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "other"), filepath.Join(cwd, "out")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"a.go", "../x", "dir/../../cwd/a", "out/x", "/etc/passwd", "./out/../dir", "out", "dir//./x/..", "", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ResolvePath(cwd, p)
		if err != nil {
			if strings.TrimSpace(p) != "" && !strings.ContainsRune(p, 0) {
				t.Fatalf("%.80q refused: %v", p, err)
			}
			return
		}
		if !filepath.IsAbs(got.Abs) || filepath.Clean(got.Abs) != got.Abs {
			t.Fatalf("%.80q: abs %.80q is not clean and absolute", p, got.Abs)
		}
		if !Within(cwd, got.Abs) && !got.OutsideCwd {
			t.Fatalf("%.80q: %.80q lies outside %.80q but is not flagged", p, got.Abs, cwd)
		}
		if Within(filepath.Join(cwd, "out"), got.Abs) && !got.OutsideCwd {
			t.Fatalf("%.80q: %.80q goes through the escaping symlink but is not flagged", p, got.Abs)
		}
		// A name too long to exist cannot be resolved and is treated
		// as outside: conservative, and it cannot be created anyway.
		if Within(filepath.Join(cwd, "dir"), got.Abs) && got.OutsideCwd && !tooLong(got.Abs) {
			t.Fatalf("%.80q: %.80q is inside but flagged", p, got.Abs)
		}
	})
}

func tooLong(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if len(c) > 255 {
			return true
		}
	}
	return false
}
