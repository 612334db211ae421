package agentdef

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(pattern)
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

// FuzzFrontmatter checks that the frontmatter parser never panics on any
// input and keeps its promises: a definition it returns has a valid name
// and a description, a problem's line lies within the file, and a split
// frontmatter is a part of its input.
func FuzzFrontmatter(f *testing.F) {
	addSeeds(f, "testdata/malformed/*.md")
	addSeeds(f, "testdata/project/.acp-agent/agents/*.md")
	addSeeds(f, "testdata/project/.claude/agents/*.md")
	addSeeds(f, "testdata/project/.gemini/agents/*.md")
	addSeeds(f, "testdata/project/.cursor/agents/*.md")
	addSeeds(f, "testdata/project/.github/agents/*.agent.md")
	addSeeds(f, "testdata/project/.opencode/agents/*.md")
	addSeeds(f, "testdata/user/config/opencode/agents/*.md")
	f.Add([]byte("---\ndescription: d\ntools: a, b\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		if fm, err := SplitFrontmatter(data); err == nil {
			if !bytes.Contains(data, fm.YAML) || !bytes.HasSuffix(data, fm.Body) || fm.BodyLine < 3 || fm.BodyLine > lines+1 {
				t.Fatalf("split %q: yaml %q body %q bodyLine %d", data, fm.YAML, fm.Body, fm.BodyLine)
			}
		}
		for _, format := range []Format{FormatOurs, FormatClaude, FormatGemini, FormatCursor, FormatCopilot, FormatOpencode} {
			def, probs := Parse("agent.md", format, data)
			for _, p := range probs {
				if p.Line < 0 || p.Line > lines+1 || p.Message == "" || p.File != "agent.md" {
					t.Fatalf("%s: problem %+v out of range (%d lines)", format, p, lines)
				}
				if def == nil && !p.Skipped {
					t.Fatalf("%s: skipped file with a non-skipping problem %+v", format, p)
				}
			}
			if def == nil {
				if len(probs) == 0 {
					t.Fatalf("%s: skipped without a reason", format)
				}
				continue
			}
			if checkName(def.Name) != nil || def.Description == "" || def.Hash == "" {
				t.Fatalf("%s: invalid definition %+v", format, def)
			}
			if def.Mode != ModeBackground && def.Mode != ModeForeground {
				t.Fatalf("%s: mode %q", format, def.Mode)
			}
		}
	})
}

// FuzzCodex is the same for Codex's TOML files.
func FuzzCodex(f *testing.F) {
	addSeeds(f, "testdata/malformed/*.toml")
	addSeeds(f, "testdata/project/.codex/agents/*.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		def, probs := Parse("agent.toml", FormatCodex, data)
		for _, p := range probs {
			if p.Line < 0 || p.Line > lines+1 || p.Message == "" {
				t.Fatalf("problem %+v out of range (%d lines)", p, lines)
			}
		}
		if def != nil && (checkName(def.Name) != nil || def.Description == "") {
			t.Fatalf("invalid definition %+v", def)
		}
		if def == nil && len(probs) == 0 {
			t.Fatal("skipped without a reason")
		}
	})
}
