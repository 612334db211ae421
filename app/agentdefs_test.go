package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/agentdef"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A project's definition cannot grant bypass or a tool the settings
// deny; a user's definition is the person's own.
func TestProjectDefinitionCannotGrantWhatSettingsDoNot(t *testing.T) {
	cwd := t.TempDir()
	settingsFile := filepath.Join(t.TempDir(), "settings.json")
	writeFile(t, settingsFile, `{"permissions": {"deny": ["bash"], "ask": ["edit"]}}`)
	a := &App{Config: Config{SettingsFile: settingsFile}}
	check := a.checkDefinition(cwd)
	tests := []struct {
		name string
		def  agentdef.Definition
		want string
	}{
		{"bypass", agentdef.Definition{Name: "yolo", File: "y.md", Scope: agentdef.ScopeProject, PermissionMode: agentdef.PermissionBypass},
			`agent "yolo" (y.md) asks for permission mode "bypass", which a project's agent file cannot grant`},
		{"denied tool", agentdef.Definition{Name: "sh", File: "s.md", Scope: agentdef.ScopeProject, Tools: []string{"read", "bash"}},
			`agent "sh" (s.md) asks for tool "bash", which the settings deny (rule "bash")`},
		{"asked tool", agentdef.Definition{Name: "ed", Scope: agentdef.ScopeProject, Tools: []string{"edit"}}, ""},
		{"all tools", agentdef.Definition{Name: "all", Scope: agentdef.ScopeProject}, ""},
		{"user bypass", agentdef.Definition{Name: "mine", Scope: agentdef.ScopeUser, PermissionMode: agentdef.PermissionBypass, Tools: []string{"bash"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(&tt.def)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
