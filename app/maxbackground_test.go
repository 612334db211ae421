package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/subagent"
)

// TestMaxBackgroundPrecedence: the flag wins over the user settings file,
// the file over the default; the environment variable feeds the flag.
func TestMaxBackgroundPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(`{"subagents": {"maxBackground": 2}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want int
	}{
		{"default", Config{}, subagent.DefaultMaxBackground},
		{"settings", Config{SettingsFile: file}, 2},
		{"flag over settings", Config{SettingsFile: file, MaxBackground: 7}, 7},
	} {
		a := &App{Config: tt.cfg}
		if got := a.maxBackground(); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
