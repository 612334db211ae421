package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillsCommandPrintsSkillsAndProblems(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	writeFile(t, filepath.Join(dir, ".acp-agent", "skills", "release-notes", "SKILL.md"),
		"---\nname: release-notes\ndescription: Write release notes.\n---\nBody.\n")
	writeFile(t, filepath.Join(dir, ".claude", "skills", "broken", "SKILL.md"), "---\nname: broken\n---\n")
	writeFile(t, filepath.Join(home, ".agents", "skills", "diagrams", "SKILL.md"), "---\nname: diagrams\ndescription: Draw diagrams.\ncolor: red\n---\n")
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"skills", dir}, strings.NewReader(""), &out, &errb, getenv); code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	want := "Skills of " + dir + " (2):\n" +
		"  diagrams — Draw diagrams.\n" +
		"      folder: " + filepath.Join(home, ".agents", "skills", "diagrams") + " (user, agents)\n" +
		"  release-notes — Write release notes.\n" +
		"      folder: .acp-agent/skills/release-notes (project, acp-agent)\n" +
		"Reported (2):\n" +
		"  [skipped] .claude/skills/broken/SKILL.md:2: description is missing or empty (the model picks a skill by its description)\n" +
		"  [note] " + filepath.Join(home, ".agents", "skills", "diagrams", "SKILL.md") + ":4: key \"color\" is not used: ignored\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"skills", filepath.Join(dir, "nope")}, strings.NewReader(""), &out, &errb, getenv); code != ExitUsage {
		t.Errorf("missing directory: exit %d", code)
	}
}
