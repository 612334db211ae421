package skill

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixtures(t *testing.T) (Options, func(string) string) {
	t.Helper()
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Cwd: filepath.Join(root, "project", "sub"), GitRoot: filepath.Join(root, "project"),
		ConfigHome: filepath.Join(root, "user", "config"), Home: filepath.Join(root, "user", "home")}
	rel := func(p string) string {
		r, err := filepath.Rel(root, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	return o, rel
}

func TestLoadFixtures(t *testing.T) {
	o, rel := fixtures(t)
	s := Load(o)
	var got []string
	for _, k := range s.Skills {
		got = append(got, fmt.Sprintf("%s %s/%s %s:%d body=%q tools=%q", k.Name, k.Scope, k.Source, rel(k.File), k.Line, k.Body, k.AllowedTools))
	}
	want := []string{
		`api-style project/agents project/sub/.agents/skills/api-style/SKILL.md:2 body="Use plural nouns." tools=[]`,
		`commit-style user/acp-agent user/config/acp-agent/skills/commit-style/SKILL.md:2 body="Imperative mood." tools=[]`,
		`diagrams user/agents user/home/.agents/skills/diagrams/SKILL.md:2 body="Use mermaid." tools=[]`,
		`pdf-forms project/claude project/.claude/skills/pdf-forms/SKILL.md:2 body="Use scripts/fill.py." tools=["Read" "Bash(python" "*)"]`,
		`release-notes project/acp-agent project/.acp-agent/skills/release-notes/SKILL.md:2 body="# Release notes\n\n1. List the merged changes.\n2. Group them as in template.md." tools=[]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("skills:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var probs []string
	for _, p := range s.Problems {
		probs = append(probs, fmt.Sprintf("%s:%d skipped=%v %s", rel(p.File), p.Line, p.Skipped, p.Message))
	}
	root := filepath.Dir(o.GitRoot)
	wantProbs := []string{
		`project/.claude/skills/pdf-forms/SKILL.md:4 skipped=false allowed-tools is not enforced: every call still goes through the session's permission gate`,
		`project/.claude/skills/pdf-forms/SKILL.md:5 skipped=false key "model" is not used: ignored`,
		`project/.agents/skills/broken/SKILL.md:2 skipped=true description is missing or empty (the model picks a skill by its description)`,
		`project/.agents/skills/api-style/SKILL.md:2 skipped=true skill "api-style" is shadowed by ` + filepath.Join(root, "project/sub/.agents/skills/api-style/SKILL.md") + ` (the directory nearest the working directory wins)`,
		`user/home/.claude/skills/pdf-forms/SKILL.md:2 skipped=true skill "pdf-forms" is shadowed by ` + filepath.Join(root, "project/.claude/skills/pdf-forms/SKILL.md") + ` (a project skill wins over a user one)`,
		`project/.claude/skills/release-notes/SKILL.md:2 skipped=true skill "release-notes" is shadowed by ` + filepath.Join(root, "project/.acp-agent/skills/release-notes/SKILL.md") + ` (the order is .acp-agent/skills, .claude/skills, .agents/skills)`,
	}
	if !slices.Equal(probs, wantProbs) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(probs, "\n"), strings.Join(wantProbs, "\n"))
	}
	k, ok := s.Get("release-notes")
	if !ok || !strings.HasPrefix(k.Hash, "sha256:") || len(k.Hash) != 71 {
		t.Fatalf("Get = %+v, %v", k, ok)
	}
	files, more, err := Files(k)
	if err != nil || more || !slices.Equal(files, []string{"SKILL.md", "scripts/changes.sh", "template.md"}) {
		t.Errorf("Files = %v, %v, %v", files, more, err)
	}
}

func TestMalformedSkillsAreReportedWithLine(t *testing.T) {
	tests := []struct {
		dir  string
		line int
		want string
	}{
		{"no-frontmatter", 1, `no frontmatter: the file must start with a line "---"`},
		{"unclosed", 1, "the frontmatter is not closed"},
		{"bad-yaml", 3, "frontmatter is not valid YAML: mapping values are not allowed in this context"},
		{"no-name", 2, "name is missing"},
		{"no-description", 2, "description is missing or empty"},
		{"empty-description", 3, "description is missing or empty"},
		{"bad-name", 3, `name "Bad_Name" must be 1 to 64 lowercase letters`},
		{"double-hyphen", 2, `name "double--hyphen" must be`},
		{"other-folder", 2, `name "another-name" differs from its folder's name "other-folder"`},
		{"dup-key", 4, `key "description" appears twice (first on line 3)`},
		{"not-mapping", 2, "the frontmatter must be a mapping"},
		{"list-name", 2, "name must be a string"},
		{"empty", 2, "the frontmatter is empty"},
		{"bad-tools", 4, "allowed-tools must be a list of tools"},
		{"long-description", 3, "description is longer than 1024 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			path, err := filepath.Abs(filepath.Join("testdata", "malformed", tt.dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			k, probs := Parse(path, data)
			if k != nil {
				t.Fatalf("parsed %+v; want it skipped", k)
			}
			if len(probs) != 1 {
				t.Fatalf("problems = %v; want one", probs)
			}
			p := probs[0]
			if p.File != path || p.Line != tt.line || !p.Skipped || !strings.Contains(p.Message, tt.want) {
				t.Errorf("problem = %s (skipped %v); want line %d containing %q", p, p.Skipped, tt.line, tt.want)
			}
		})
	}
	// Loaded as a folder of skills, each is reported and none is used.
	root, _ := filepath.Abs(filepath.Join("testdata", "malformed"))
	base := t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, ".agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(base, ".agents", "skills")); err != nil {
		t.Fatal(err)
	}
	// The folder lies outside the project: it is refused as a whole.
	s := Load(Options{Cwd: base, GitRoot: base})
	if s.Len() != 0 || len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Message, "not read") {
		t.Errorf("symlinked project folder: %d skills, problems %v", s.Len(), s.Problems)
	}
}

// A skill folder or file symlinked out of the project is refused and
// reported; one symlinked inside it is read.
func TestSkillSymlinkedOutIsRefused(t *testing.T) {
	base := t.TempDir()
	repo, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "evil", FileName), "---\nname: evil\ndescription: d\n---\n")
	write(filepath.Join(outside, "secret.txt"), "secret")
	skills := filepath.Join(repo, ".acp-agent", "skills")
	write(filepath.Join(skills, "good", FileName), "---\nname: good\ndescription: d\n---\nbody\n")
	write(filepath.Join(repo, "shared", "notes", FileName), "---\nname: notes\ndescription: d\n---\n")
	for target, link := range map[string]string{
		filepath.Join(outside, "evil"):       filepath.Join(skills, "evil"),
		"../../shared/notes":                 filepath.Join(skills, "notes"),
		filepath.Join(outside, "secret.txt"): filepath.Join(skills, "good", "secret.txt"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	s := Load(Options{Cwd: repo, GitRoot: repo})
	if got := strings.Join(s.Names(), ","); got != "good,notes" {
		t.Errorf("names = %s; problems %v", got, s.Problems)
	}
	if len(s.Problems) != 1 || s.Problems[0].File != filepath.Join(skills, "evil", FileName) || !strings.Contains(s.Problems[0].Message, "not read") {
		t.Errorf("problems = %v", s.Problems)
	}
	k, _ := s.Get("good")
	files, _, err := Files(k)
	if err != nil || !slices.Equal(files, []string{FileName}) {
		t.Errorf("Files(good) = %v, %v; want the symlink out left out", files, err)
	}
}

// FuzzSkillFrontmatter checks that the SKILL.md parser never panics and
// keeps its promises: a skill it returns has a valid name equal to its
// folder's, a description within the limit and a hash; a problem's line
// lies within the file; a skipped file says why.
func FuzzSkillFrontmatter(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*/*/SKILL.md")
	more, _ := filepath.Glob("testdata/project/.*/skills/*/SKILL.md")
	for _, p := range append(paths, more...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("---\nname: s\ndescription: d\nallowed-tools: [a, b]\n---\nbody"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		k, probs := Parse("/skills/s/SKILL.md", data)
		for _, p := range probs {
			if p.Line < 0 || p.Line > lines+1 || p.Message == "" || p.File != "/skills/s/SKILL.md" {
				t.Fatalf("problem %+v out of range (%d lines)", p, lines)
			}
			if k == nil && !p.Skipped {
				t.Fatalf("skipped with a non-skipping problem %+v", p)
			}
		}
		if k == nil {
			if len(probs) != 1 {
				t.Fatalf("skipped with %d problems; want exactly one reason", len(probs))
			}
			return
		}
		if k.Name != "s" || CheckName(k.Name) != nil || k.Description == "" || len([]rune(k.Description)) > MaxDescriptionLen || k.Hash == "" {
			t.Fatalf("invalid skill %+v", k)
		}
		if k.Line < 2 || k.Line > lines {
			t.Fatalf("name line %d out of range", k.Line)
		}
	})
}
