package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
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
	_, err := providerModel(ModelConfig{Spec: "deepseek/deepseek-chat", Getenv: func(string) string { return "" }})
	if !errors.Is(err, openai.ErrMissingKey) || !errors.Is(err, model.ErrAuthRequired) || !strings.Contains(err.Error(), "DEEPSEEK_API_KEY") {
		t.Fatalf("err = %v, want ErrMissingKey and ErrAuthRequired naming DEEPSEEK_API_KEY", err)
	}
	if strings.HasPrefix(err.Error(), "openai:") {
		t.Errorf("err = %q, want no package prefix", err)
	}
	// The composition starts anyway, with a model waiting for the key.
	env := map[string]string{}
	m, why, err := resolveModel(Config{Model: "deepseek/deepseek-chat", Getenv: func(k string) string { return env[k] }}.withDefaults())
	k, ok := m.(*keyedModel)
	if err != nil || why != nil || !ok {
		t.Fatalf("resolveModel = %T, %v, %v; want a keyedModel", m, why, err)
	}
	if err := k.reload(); !errors.Is(err, model.ErrAuthRequired) {
		t.Fatalf("reload without key = %v, want ErrAuthRequired", err)
	}
	env["DEEPSEEK_API_KEY"] = "sk-test"
	if err := k.reload(); err != nil {
		t.Fatalf("reload with key = %v", err)
	}
	if cur, err := k.current(); cur == nil || err != nil {
		t.Fatalf("current after reload = %v, %v", cur, err)
	}
	if routeOf("script:x.yaml") != (model.Route{}) {
		t.Fatal("a scripted model records no route")
	}
}
