package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstructionsThatResolveOutsideAreSkipped: an AGENTS.md or CLAUDE.md
// that is a symlink to a file outside the repository and the user's
// config directory is not read; the instructions section says it was
// skipped. Symlinks inside the repository or into the config directory
// are read.
func TestInstructionsThatResolveOutsideAreSkipped(t *testing.T) {
	base := t.TempDir()
	repo, outside, config := filepath.Join(base, "repo"), filepath.Join(base, "outside"), filepath.Join(base, "config")
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), "SECRET-OUTSIDE")
	write(filepath.Join(config, "shared.md"), "FROM-CONFIG")
	write(filepath.Join(repo, "docs", "agents.md"), "FROM-REPO")
	link(filepath.Join(outside, "secret.txt"), filepath.Join(repo, AgentsFile))
	link(filepath.Join(outside, "secret.txt"), filepath.Join(repo, "a", ClaudeFile))
	link(filepath.Join(repo, "docs", "agents.md"), filepath.Join(repo, "a", "b", AgentsFile))
	link(filepath.Join(config, "shared.md"), filepath.Join(repo, "a", "b", "c", AgentsFile))
	cwd := filepath.Join(repo, "a", "b", "c")

	ins := LoadInstructions(InstructionOptions{Cwd: cwd, GitRoot: repo, UserFile: filepath.Join(config, "acp-agent", AgentsFile)})
	section := instructionsSection(ins)
	if strings.Contains(section, "SECRET-OUTSIDE") {
		t.Fatalf("an outside file entered the prompt:\n%s", section)
	}
	for _, want := range []string{"FROM-REPO", "FROM-CONFIG",
		"[Not read: " + filepath.Join(repo, AgentsFile), "[Not read: " + filepath.Join(repo, "a", ClaudeFile),
		"outside the repository and the user's config directory"} {
		if !strings.Contains(section, want) {
			t.Errorf("the section lacks %q:\n%s", want, section)
		}
	}
}
