package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// TestContextPolicyFromFlagsAndSettings: a flag wins over the settings
// file, the file over the built-in table; --context-window covers every
// model, so the file's per-model windows give way to it too.
func TestContextPolicyFromFlagsAndSettings(t *testing.T) {
	llama := model.Route{Provider: "openai-compatible", Model: "llama3"}
	file := settings.Context{Window: 64_000, CompactThreshold: 0.6, Windows: map[string]int{"openai-compatible/llama3": 8192}}
	tests := []struct {
		name      string
		window    int
		threshold float64
		c         settings.Context
		want      budget.Config
	}{
		{"nothing", 0, 0, settings.Context{}, budget.Config{}},
		{"flags", 4000, 0.5, settings.Context{}, budget.Config{Window: 4000, Threshold: 0.5}},
		{"settings", 0, 0, file, budget.Config{Window: 64_000, Threshold: 0.6, Windows: map[model.Route]int{llama: 8192}}},
		{"flags win", 4000, 0.9, file, budget.Config{Window: 4000, Threshold: 0.9}},
		{"window flag, threshold from settings", 4000, 0, file, budget.Config{Window: 4000, Threshold: 0.6}},
		{"threshold flag, windows from settings", 0, 0.9, file, budget.Config{Window: 64_000, Threshold: 0.9, Windows: map[model.Route]int{llama: 8192}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contextPolicy(tt.window, tt.threshold, tt.c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("contextPolicy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestContextPolicyReadFromTheUserFile: the composition's sessions get
// the user file's windows and threshold (a session on llama3 compacts at
// 0.6 of 8192 tokens, one on a known model at 0.6 of the window the file
// sets for every model).
func TestContextPolicyReadFromTheUserFile(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(user, []byte(`{"context": {"window": 64000, "compactThreshold": 0.6, "windows": {"openai-compatible/llama3": 8192}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{DataDir: filepath.Join(dir, "data"), SettingsFile: user, Testing: &testhooks.Hooks{NoSync: true}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := a.budget()
	if got := b.Limit(model.Route{Provider: "openai-compatible", Model: "llama3"}); got != 4915 {
		t.Errorf("llama3 limit = %d, want 4915", got)
	}
	if got := b.Limit(model.Route{Provider: "deepseek", Model: "deepseek-chat"}); got != 38_400 {
		t.Errorf("deepseek-chat limit = %d, want 38400", got)
	}
}
