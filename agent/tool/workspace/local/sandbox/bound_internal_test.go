package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkBoundFailsClosed (issue 51: "the guard's walk bound can be hit
// on purpose"): a tree past the bound is never taken for one without new
// protected paths. Before a command, Prepare refuses it
// (SANDBOX_UNAVAILABLE) rather than run it with a .git it could not find
// to keep read-only; after one (a command that made the tree grow past
// the bound, then a .git and a planted link late in the walk), Check
// returns an error saying new protected paths may be left, which the
// bash tool's result shows, alongside what it did move.
func TestWalkBoundFailsClosed(t *testing.T) {
	defer func(n int) { maxProtectWalk = n }(maxProtectWalk)
	maxProtectWalk = 50
	base := t.TempDir()
	cwd, tmp := filepath.Join(base, "work"), filepath.Join(base, "tmp")
	for _, d := range []string{cwd, tmp, filepath.Join(tmp, "x", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	sb := New(Policy{TempDir: tmp}, Options{Executable: "/bin/true", Probe: func() Support { return Support{ABI: 4, NetNS: true, MountNS: true} }})
	cmd := exec.Command("/bin/true")
	cmd.Dir = cwd
	g, err := sb.Prepare(cmd)
	if err != nil {
		t.Fatalf("Prepare under the bound: %v", err)
	}

	// What the command did: a top-level .vscode (early in the walk), many
	// files, then a deep .git and a link to the repository in the temp
	// dir, both past the bound.
	if err := os.Mkdir(filepath.Join(cwd, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2 * maxProtectWalk {
		if err := os.WriteFile(filepath.Join(cwd, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cwd, "zz", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "x"), filepath.Join(cwd, "zzz")); err != nil {
		t.Fatal(err)
	}
	moved, err := g.Check()
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", maxProtectWalk)) || !strings.Contains(err.Error(), "may be left") {
		t.Fatalf("Check past the bound returned %v, want an error saying new protected paths may be left", err)
	}
	if len(moved) != 1 || moved[0].Path != filepath.Join(cwd, ".vscode") {
		t.Errorf("moved %v, want the .vscode found before the bound", moved)
	}

	// The next command is refused, not run with what the walk missed.
	cmd = exec.Command("/bin/true")
	cmd.Dir = cwd
	if _, err := sb.Prepare(cmd); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Prepare past the bound: %v, want ErrUnavailable", err)
	}
}
