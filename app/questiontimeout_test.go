package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/acp"
)

// TestQuestionTimeoutSetting: subagents.questionTimeout sets how long a
// child's question may wait ("0" and "off" for ever, default 10m); a bad
// value is an error naming the setting.
func TestQuestionTimeoutSetting(t *testing.T) {
	for _, tt := range []struct {
		value   string
		want    time.Duration
		wantErr bool
	}{
		{"", acp.DefaultQuestionTimeout, false},
		{"90s", 90 * time.Second, false},
		{"0", -1, false},
		{"off", -1, false},
		{"soon", 0, true},
		{"-5m", 0, true},
	} {
		file := filepath.Join(t.TempDir(), "settings.json")
		body := `{}`
		if tt.value != "" {
			body = `{"subagents": {"questionTimeout": "` + tt.value + `"}}`
		}
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		a := &App{Config: Config{SettingsFile: file}}
		h, err := a.heldQuestions()
		switch {
		case tt.wantErr:
			if err == nil || !strings.Contains(err.Error(), "subagents.questionTimeout") {
				t.Errorf("%q: error %v, want one naming subagents.questionTimeout", tt.value, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.value, err)
		case h.Timeout() != tt.want:
			t.Errorf("%q: timeout %s, want %s", tt.value, h.Timeout(), tt.want)
		}
	}
}
