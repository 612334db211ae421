package openai

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
)

func TestParseModelFlag(t *testing.T) {
	tests := []struct {
		in   string
		want model.Route
		err  bool
	}{
		{in: "deepseek/deepseek-chat", want: model.Route{Provider: "deepseek", Model: "deepseek-chat"}},
		{in: "openai/gpt-4.1", want: model.Route{Provider: "openai", Model: "gpt-4.1"}},
		{in: "openai-compatible/meta-llama/Llama-3.1-8B", want: model.Route{Provider: "openai-compatible", Model: "meta-llama/Llama-3.1-8B"}},
		{in: "", err: true},
		{in: "deepseek", err: true},
		{in: "deepseek/", err: true},
		{in: "anthropic/claude", err: true},
		{in: "script:demo.txt", err: true},
		{in: " deepseek/x", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseModelFlag(tt.in)
			if tt.err {
				if !errors.Is(err, ErrInvalidModelFlag) {
					t.Errorf("err = %v, want ErrInvalidModelFlag", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseModelFlag = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	env := map[string]string{"DEEPSEEK_API_KEY": "ds-key", "MY_KEY": "", "OPENAI_API_KEY": ""}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name    string
		flag    string
		baseURL string
		keyEnv  string
		wantIs  error
		wantIn  []string
	}{
		{name: "deepseek key from env", flag: "deepseek/deepseek-chat"},
		{name: "openai key missing", flag: "openai/gpt-4.1", wantIs: ErrMissingKey, wantIn: []string{"openai", "OPENAI_API_KEY"}},
		{name: "named key variable empty", flag: "deepseek/x", keyEnv: "MY_KEY", wantIs: ErrMissingKey, wantIn: []string{"deepseek", "MY_KEY"}},
		{name: "compatible needs a base URL", flag: "openai-compatible/llama", wantIs: ErrMissingBaseURL, wantIn: []string{"--base-url"}},
		{name: "compatible without key", flag: "openai-compatible/llama", baseURL: "http://127.0.0.1:8080/v1"},
		{name: "compatible with named empty key", flag: "openai-compatible/llama", baseURL: "http://127.0.0.1:8080/v1", keyEnv: "MY_KEY", wantIs: ErrMissingKey},
		{name: "bad base URL", flag: "openai-compatible/llama", baseURL: "localhost:8080", wantIs: ErrInvalidBaseURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ConfigFromFlags(tt.flag, tt.baseURL, tt.keyEnv)
			if err == nil {
				cfg.Getenv = getenv
				_, err = New(cfg)
			}
			if tt.wantIs == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("err = %v, want %v", err, tt.wantIs)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		wantIs error
	}{
		{"unknown provider", Config{Provider: "x", Model: "m", APIKey: "k"}, ErrUnknownProvider},
		{"no model", Config{Provider: ProviderDeepSeek, APIKey: "k"}, ErrMissingModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want %v", err, tt.wantIs)
			}
		})
	}
}

func TestConfigRedactsKey(t *testing.T) {
	const key = "sk-secret-value-42"
	cfg := Config{Provider: ProviderOpenAI, Model: "gpt-4.1", APIKey: key, HTTPClient: &http.Client{}}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("model configured", "config", cfg)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("model configured", "config", cfg)
	fmt.Fprintf(&buf, "%v %+v %#v %s", cfg, cfg, cfg, cfg)
	if strings.Contains(buf.String(), key) {
		t.Errorf("key leaked:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "[redacted]") {
		t.Errorf("no redaction marker:\n%s", buf.String())
	}
}

func TestBackoffBounded(t *testing.T) {
	c := &client{cfg: Config{RetryBase: 100 * time.Millisecond, MaxRetryDelay: time.Second}}
	for attempt := 1; attempt <= 64; attempt++ {
		base := min(100*time.Millisecond<<min(attempt-1, 10), time.Second)
		d, ok := c.delay(attempt, nil, time.Time{})
		if !ok || d < base/2 || d > base {
			t.Fatalf("attempt %d: delay %v (ok %v), want within [%v, %v]", attempt, d, ok, base/2, base)
		}
	}
}
