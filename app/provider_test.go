package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/anthropic"
	"github.com/acp-agent/acp-agent/agent/model/openai"
)

func TestProviderSpecsResolveToOpenAICompatibleModels(t *testing.T) {
	env := map[string]string{"DEEPSEEK_API_KEY": "sk-test", "OPENAI_API_KEY": "sk-test"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		spec, baseURL string
		wantErr       error
		wantRoute     model.Route
	}{
		{spec: "deepseek/deepseek-chat", wantRoute: model.Route{Provider: "deepseek", Model: "deepseek-chat"}},
		{spec: "openai/gpt-4.1", wantRoute: model.Route{Provider: "openai", Model: "gpt-4.1"}},
		{spec: "openai-compatible/qwen", baseURL: "http://127.0.0.1:1/v1", wantRoute: model.Route{Provider: "openai-compatible", Model: "qwen"}},
		{spec: "openai-compatible/qwen", wantErr: openai.ErrMissingBaseURL},
		{spec: "nonsense", wantErr: openai.ErrInvalidModelFlag},
	}
	for _, tt := range tests {
		t.Run(tt.spec+tt.baseURL, func(t *testing.T) {
			m, err := providerModel(ModelConfig{Spec: tt.spec, BaseURL: tt.baseURL, Getenv: getenv})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || m == nil {
				t.Fatalf("providerModel: %v", err)
			}
			if got := routeOf(tt.spec); got != tt.wantRoute {
				t.Fatalf("route %+v, want %+v", got, tt.wantRoute)
			}
		})
	}
}

func TestMissingProviderKeyIsAuthRequiredNamingTheVariable(t *testing.T) {
	for _, tt := range []struct {
		spec, env string
		sentinel  error
	}{
		{"deepseek/deepseek-chat", "DEEPSEEK_API_KEY", openai.ErrMissingKey},
		{"anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY", anthropic.ErrMissingKey},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := providerModel(ModelConfig{Spec: tt.spec, Getenv: func(string) string { return "" }})
			if !errors.Is(err, tt.sentinel) || !errors.Is(err, model.ErrAuthRequired) || !strings.Contains(err.Error(), tt.env) {
				t.Fatalf("err = %v, want %v and ErrAuthRequired naming %s", err, tt.sentinel, tt.env)
			}
			if strings.HasPrefix(err.Error(), "openai:") || strings.HasPrefix(err.Error(), "anthropic:") {
				t.Errorf("err = %q, want no package prefix", err)
			}
			// The composition starts anyway, with a model waiting for the
			// key, offered as an env_var auth method.
			env := map[string]string{}
			m, why, err := resolveModel(Config{Model: tt.spec, Getenv: func(k string) string { return env[k] }}.withDefaults())
			k, ok := m.(*keyedModel)
			if err != nil || why != nil || !ok {
				t.Fatalf("resolveModel = %T, %v, %v; want a keyedModel", m, why, err)
			}
			methods := newAuth([]ModelChoice{{Model: k}}).AuthMethods()
			if len(methods) != 1 || methods[0].ID != tt.env {
				t.Errorf("auth methods %+v, want one for %s", methods, tt.env)
			}
			if err := k.reload(); !errors.Is(err, model.ErrAuthRequired) {
				t.Fatalf("reload without key = %v, want ErrAuthRequired", err)
			}
			env[tt.env] = "sk-test"
			if err := k.reload(); err != nil {
				t.Fatalf("reload with key = %v", err)
			}
			if cur, err := k.current(); cur == nil || err != nil {
				t.Fatalf("current after reload = %v, %v", cur, err)
			}
		})
	}
	if routeOf("script:x.yaml") != (model.Route{}) {
		t.Fatal("a scripted model records no route")
	}
}
