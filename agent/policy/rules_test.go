package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

func loadRules(t *testing.T, user string) *settings.Policy {
	t.Helper()
	f := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(f, []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	p := settings.Load(f, t.TempDir())
	if err := p.Problems(); len(err) > 0 {
		t.Fatal(err)
	}
	return p
}

// TestRulesOnWrittenAndResolvedPaths: an allow needs both the written
// and the resolved path to match, a deny or ask either.
func TestRulesOnWrittenAndResolvedPaths(t *testing.T) {
	p := loadRules(t, `{"permissions": {"allow": ["edit(src/**)", "read(docs/**)"], "ask": ["edit(conf/**)"], "deny": ["read(.env)"]}}`)
	tests := []struct {
		name       string
		tool, kind string
		s          Subject
		want       Rule
	}{
		{"plain file under the allowed dir", "write", KindEdit, Subject{"src/a.go", "src/a.go"}, RuleAllow},
		{"symlink under src/ to a file elsewhere", "write", KindEdit, Subject{"src/notes.md", "/tmp/outside/secret.txt"}, RuleNone},
		{"symlink elsewhere to a file under src/", "write", KindEdit, Subject{"notes.md", "src/a.go"}, RuleNone},
		{"symlink to a denied file, read", "read", KindRead, Subject{"notes", ".env"}, RuleDeny},
		{"symlink to a denied file, grep", "grep", KindSearch, Subject{"docs/x", ".env"}, RuleDeny},
		{"denied name, resolved elsewhere", "read", KindRead, Subject{".env", "real.env.txt"}, RuleDeny},
		{"ask on the target", "write", KindEdit, Subject{"src/c", "conf/c"}, RuleAsk},
		{"no resolved path (a command)", "bash", KindExecute, Subject{"ls", ""}, RuleNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Rules(p, tt.tool, tt.kind, tt.s, false); got != tt.want {
				t.Errorf("%s, want %s", got, tt.want)
			}
		})
	}
}

// TestExactCommandRuleEscapesWildcards: "always allow exactly this
// command" for rm -f *.o covers that command and no other.
func TestExactCommandRuleEscapesWildcards(t *testing.T) {
	rule := AlwaysRule(KindExecute, "bash", "rm -f *.o", Inside)
	if rule != `bash(rm -f \*.o)` {
		t.Fatalf("saved %q", rule)
	}
	p := loadRules(t, `{"permissions": {"allow": [`+quoteJSON(rule)+`]}}`)
	for cmd, want := range map[string]Rule{
		"rm -f *.o":                       RuleAllow,
		"rm -f ../outside/secret.txt x.o": RuleNone,
		"rm -f a.o":                       RuleNone,
		`rm -f \*.o`:                      RuleNone,
	} {
		if got, _ := Rules(p, "bash", KindExecute, Subject{Lexical: cmd}, false); got != want {
			t.Errorf("%q: %s, want %s", cmd, got, want)
		}
	}
	if r := AlwaysRule(KindExecute, "bash", `echo a\b`, Inside); r != `bash(echo a\\b)` {
		t.Errorf("backslash saved as %q", r)
	}
	for _, c := range []Class{Outside, Protected} {
		if r := AlwaysRule(KindEdit, "write", "src/a.go", c); r != "" {
			t.Errorf("%s path saved %q", c, r)
		}
	}
}

func quoteJSON(s string) string {
	out := `"`
	for _, r := range s {
		if r == '\\' || r == '"' {
			out += `\`
		}
		out += string(r)
	}
	return out + `"`
}

// TestProtectorFindsTheAgentsOwnFiles: the user settings file and the
// data directory, as written or through a symlink.
func TestProtectorFindsTheAgentsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	settingsFile := filepath.Join(dir, "cfg", "acp-agent", "settings.json")
	data := filepath.Join(dir, "data")
	p := Protector{Files: []string{settingsFile}, Dirs: []string{data}}
	for path, want := range map[string]bool{
		settingsFile:                         true,
		filepath.Join(data, "sessions", "x"): true,
		data:                                 true,
		filepath.Join(dir, "data2"):          false,
		filepath.Join(dir, "cfg", "other"):   false,
	} {
		if got := p.Reason(path) != ""; got != want {
			t.Errorf("%s: protected %v, want %v", path, got, want)
		}
	}
	if p.Reason("", filepath.Join(dir, "x")) != "" || p.Reason("", settingsFile) == "" {
		t.Error("the resolved path is not checked")
	}
}

func TestProtectedRel(t *testing.T) {
	for rel, want := range map[string]bool{
		".git/config": true, "src/x/.git/hooks/pre-commit": true, ".acp-agent/settings.json": true,
		".vscode/tasks.json": true, ".vscode/settings.json": true, ".zed/settings.json": true, ".zed/tasks.json": true,
		".idea/workspace.xml": true, ".gitignore": false, "src/git/x": false, ".vscode/notes.md": false,
		// Issue 51: agent definition and skill folders of every format,
		// user and project, and other agents' command-running config.
		".acp-agent/agents/helper.md": true, ".acp-agent/skills/x/SKILL.md": true,
		".claude/agents/helper.md": true, ".claude/skills/x/SKILL.md": true, ".claude/settings.json": true,
		".claude/settings.local.json": true, ".mcp.json": true, "sub/.mcp.json": true, ".codex/config.toml": true,
		".codex/agents/a.toml": true, ".gemini/settings.json": true, ".gemini/agents/a.md": true,
		".cursor/mcp.json": true, ".cursor/agents/a.md": true, ".github/agents/a.md": true, ".opencode/agents/a.md": true,
		".agents/skills/x/SKILL.md": true, ".config/acp-agent/agents/helper.md": true, ".config/acp-agent/skills/s/SKILL.md": true,
		".config/opencode/agents/a.md": true, ".gitconfig": true, ".config/git/config": true, ".config/git/attributes": true,
		"gitconfig": false, ".config/gitx/config": false,
		".github/workflows/ci.yml": false, ".config/other/x": false, "mcp.json": false, "docs/claude.md": false,
	} {
		if got := ProtectedRel(rel) != ""; got != want {
			t.Errorf("%s: protected %v, want %v", rel, got, want)
		}
	}
}

// One set: every name the gate protects is one the sandbox keeps
// read-only (ProtectedEntry) and the guard reacts to (ProtectedNames).
func TestOneProtectedSet(t *testing.T) {
	names := ProtectedNames()
	for name := range wholeNames {
		if !ProtectedEntry("any", name) || !names[name] {
			t.Errorf("%s: protected by the gate but not by the sandbox", name)
		}
	}
	for parent, kids := range pairNames {
		if !names[parent] {
			t.Errorf("%s: not watched", parent)
		}
		for kid := range kids {
			if !sandboxWhole[parent] && !ProtectedEntry(parent, kid) {
				t.Errorf("%s/%s: protected by the gate but not by the sandbox", parent, kid)
			}
			if ProtectedRel(parent+"/"+kid+"/x") == "" && ProtectedRel(parent+"/"+kid) == "" {
				t.Errorf("%s/%s: not protected by the gate", parent, kid)
			}
		}
	}
	if ProtectedEntry("src", "agents") || ProtectedEntry("any", ".github") || ProtectedEntry("any", ".config") {
		t.Error("the sandbox keeps more than the set read-only")
	}
}
