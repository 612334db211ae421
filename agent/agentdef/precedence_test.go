package agentdef

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeAgent writes a definition named name in format f's folder below
// base (a project level, or the user's home / config directory).
func writeAgent(t *testing.T, dir string, f Format, name, desc string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := name + formatInfo[f].ext
	text := "---\nname: " + name + "\ndescription: " + desc + "\n---\nbody\n"
	if f == FormatCodex {
		text = "name = \"" + name + "\"\ndescription = \"" + desc + "\"\n"
	}
	if f == FormatOpencode {
		text = "---\ndescription: " + desc + "\nmode: subagent\n---\nbody\n"
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// One name defined in every folder of all seven formats, project and
// user: the winner is, in turn, each of them in the documented order
// (project before user, then Formats' order), as the better ones are
// removed one by one.
func TestPrecedenceAcrossAllSevenFormats(t *testing.T) {
	base := t.TempDir()
	o := Options{Cwd: filepath.Join(base, "repo"), GitRoot: filepath.Join(base, "repo"),
		Home: filepath.Join(base, "home"), ConfigHome: filepath.Join(base, "home", ".config")}
	type cand struct {
		scope  Scope
		format Format
		path   string
	}
	var order []cand
	for _, scope := range []Scope{ScopeProject, ScopeUser} {
		for _, f := range Formats {
			info := formatInfo[f]
			var dir string
			switch {
			case scope == ScopeProject:
				dir = filepath.Join(o.Cwd, filepath.FromSlash(info.project))
			case info.configUser != "":
				dir = filepath.Join(o.ConfigHome, filepath.FromSlash(info.configUser))
			default:
				dir = filepath.Join(o.Home, filepath.FromSlash(info.user))
			}
			desc := string(scope) + " " + string(f)
			order = append(order, cand{scope, f, writeAgent(t, dir, f, "same", desc)})
		}
	}
	if len(order) != 14 {
		t.Fatalf("%d candidates", len(order))
	}
	for i, want := range order {
		s := Load(o)
		d, ok := s.Get("same")
		if !ok {
			t.Fatalf("step %d: no definition; problems %v", i, s.Problems)
		}
		if d.Scope != want.scope || d.Format != want.format || d.File != want.path {
			t.Fatalf("step %d: winner %s/%s %s; want %s/%s", i, d.Scope, d.Format, d.File, want.scope, want.format)
		}
		if d.Description != string(want.scope)+" "+string(want.format) {
			t.Errorf("step %d: description %q", i, d.Description)
		}
		// Every loser is reported as shadowed, naming the winner.
		shadowed := 0
		for _, p := range s.Problems {
			if strings.Contains(p.Message, `agent "same" is shadowed by `+want.path) {
				shadowed++
			}
		}
		if shadowed != len(order)-i-1 {
			t.Errorf("step %d: %d shadowed reports; want %d: %v", i, shadowed, len(order)-i-1, s.Problems)
		}
		if err := os.Remove(want.path); err != nil {
			t.Fatal(err)
		}
	}
}

// A definition file symlinked out of the project (or a folder of them)
// is refused and reported, never read: reads stay beneath the top of the
// project walk, as the tools' reads stay beneath the cwd.
func TestDefinitionSymlinkedOutOfTheProjectIsRefused(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	outside := filepath.Join(base, "outside")
	writeAgent(t, outside, FormatOurs, "evil", "from outside")
	writeAgent(t, filepath.Join(outside, "claude"), FormatClaude, "evil2", "from outside")
	agents := filepath.Join(repo, ".acp-agent", "agents")
	writeAgent(t, agents, FormatOurs, "fine", "inside")
	if err := os.Symlink(filepath.Join(outside, "evil.md"), filepath.Join(agents, "evil.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fine.md", filepath.Join(agents, "alias.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "claude"), filepath.Join(repo, ".claude", "agents")); err != nil {
		t.Fatal(err)
	}
	s := Load(Options{Cwd: repo, GitRoot: repo})
	if got := strings.Join(s.Names(), ","); got != "fine" {
		t.Errorf("names = %s; want fine only (alias.md is a duplicate of it)", got)
	}
	var refused []string
	for _, p := range s.Problems {
		if strings.Contains(p.Message, "not read") {
			refused = append(refused, p.File)
		}
	}
	want := []string{filepath.Join(repo, ".claude", "agents"), filepath.Join(agents, "evil.md")}
	if strings.Join(refused, "|") != strings.Join(want, "|") {
		t.Errorf("refused = %v; want %v (problems %v)", refused, want, s.Problems)
	}
}

// The person's own folders may link anywhere (a dotfiles checkout): a
// user definition symlinked out of $HOME is read.
func TestUserDefinitionMayLinkAnywhere(t *testing.T) {
	base := t.TempDir()
	dotfiles := filepath.Join(base, "dotfiles")
	writeAgent(t, dotfiles, FormatClaude, "mine", "from my dotfiles")
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, filepath.Join(home, ".claude", "agents")); err != nil {
		t.Fatal(err)
	}
	s := Load(Options{Home: home})
	if d, ok := s.Get("mine"); !ok || d.Scope != ScopeUser || d.Description != "from my dotfiles" {
		t.Errorf("mine = %+v, %v; problems %v", d, ok, s.Problems)
	}
}
