package recording

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Snapshots are read through the resolver of the agent's own file work:
// a file reached through a folder symlinked out of the working directory,
// a symlink to an outside file, and a hard link to one are not copied into
// the recording; an ordinary file is.
func TestSnapshotsStayInTheWorkingDirectory(t *testing.T) {
	base := t.TempDir()
	cwd, outside := filepath.Join(base, "cwd"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(cwd, ".acp-agent"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "plain.txt"), []byte("plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, ".acp-agent", "agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cwd, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(cwd, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Cwd: cwd})
	for _, rel := range []string{"plain.txt", ".acp-agent/agents/secret.txt", "link.txt", "hard.txt"} {
		r.AddFile(rel)
	}
	files := r.Files()
	if files["plain.txt"] != "plain\n" {
		t.Fatalf("an ordinary file was not snapshotted: %v", files)
	}
	for rel, content := range files {
		if strings.Contains(content, "outside secret") {
			t.Errorf("%s: an outside file's content was copied into the recording", rel)
		}
	}
	if notes := strings.Join(r.Notes(), "\n"); !strings.Contains(notes, "resolves outside the working directory") || !strings.Contains(notes, "more than one hard link") {
		t.Errorf("notes do not say why: %s", notes)
	}
}
