package workspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// TestUnresolvablePathsCountAsOutside: a location whose real place cannot
// be established (a symlink loop, a directory that cannot be searched) is
// never treated as inside the cwd (issue 24 mutation: "symlink loops /
// EACCES during resolution counted as inside").
func TestUnresolvablePathsCountAsOutside(t *testing.T) {
	cwd := t.TempDir()
	if err := os.Symlink("loop-b", filepath.Join(cwd, "loop-a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop-a", filepath.Join(cwd, "loop-b")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"loop-a", "loop-a/x.txt", "loop-b/deeper/x.txt"} {
		got, err := workspace.ResolvePath(cwd, p)
		if err != nil {
			t.Fatal(err)
		}
		if !got.OutsideCwd {
			t.Errorf("%s resolved as inside: %+v", p, got)
		}
	}
	t.Run("EACCES", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: permission bits do not stop root, so EACCES cannot be produced")
		}
		locked := filepath.Join(cwd, "locked")
		if err := os.MkdirAll(filepath.Join(locked, "in"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		got, err := workspace.ResolvePath(cwd, "locked/in/x.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !got.OutsideCwd {
			t.Errorf("a path under an unsearchable directory resolved as inside: %+v", got)
		}
	})
}
