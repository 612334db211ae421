package openai

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3/shared"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestOffEffort: only OpenAI's GPT-5 reasoning models have an effort that
// turns reasoning off; the others are left alone.
func TestOffEffort(t *testing.T) {
	tests := []struct {
		provider, id string
		want         shared.ReasoningEffort
	}{
		{ProviderOpenAI, "gpt-5", shared.ReasoningEffortMinimal},
		{ProviderOpenAI, "gpt-5-mini", shared.ReasoningEffortMinimal},
		{ProviderOpenAI, "gpt-5-nano-2025-08-07", shared.ReasoningEffortMinimal},
		{ProviderOpenAI, "gpt-5-2025-08-07", shared.ReasoningEffortMinimal},
		{ProviderOpenAI, "gpt-5.1", shared.ReasoningEffortNone},
		{ProviderOpenAI, "gpt-5.2-mini", shared.ReasoningEffortNone},
		{ProviderOpenAI, "gpt-5.1-codex", ""},
		{ProviderOpenAI, "gpt-5-chat-latest", ""},
		{ProviderOpenAI, "gpt-5-pro", ""},
		{ProviderOpenAI, "gpt-50", ""},
		{ProviderOpenAI, "gpt-4.1", ""},
		{ProviderOpenAI, "o3", ""},
		{ProviderDeepSeek, "deepseek-reasoner", ""},
		{ProviderCompatible, "gpt-5", ""},
	}
	for _, tt := range tests {
		if got := offEffort(tt.provider, tt.id); got != tt.want {
			t.Errorf("offEffort(%s, %s) = %q, want %q", tt.provider, tt.id, got, tt.want)
		}
	}
}

// TestThinkingSwitchOnTheWire: a GPT-5 model offers the switch; a request
// with thinking off carries the effort that turns reasoning off, one with
// thinking on carries none (the model's default, as before); a model
// without the switch ignores NoThinking.
func TestThinkingSwitchOnTheWire(t *testing.T) {
	tests := []struct {
		provider, id string
		noThinking   bool
		switches     bool
		want         any // reasoning_effort sent, nil for none
	}{
		{ProviderOpenAI, "gpt-5", false, true, nil},
		{ProviderOpenAI, "gpt-5", true, true, "minimal"},
		{ProviderOpenAI, "gpt-5.1", true, true, "none"},
		{ProviderOpenAI, "gpt-4.1", true, false, nil},
		{ProviderDeepSeek, "deepseek-reasoner", true, false, nil},
	}
	for _, tt := range tests {
		r := newReplay(t, sseFile(t, "text.sse"))
		cfg := r.config()
		cfg.Provider, cfg.Model = tt.provider, tt.id
		m := newModel(t, cfg)
		if got := model.SwitchesThinking(m); got != tt.switches {
			t.Errorf("%s/%s: SwitchesThinking = %v, want %v", tt.provider, tt.id, got, tt.switches)
		}
		req := model.Request{Messages: []model.Message{{Role: session.RoleUser, Content: []session.Block{session.Text("hi")}}}, NoThinking: tt.noThinking}
		if _, err := collect(t, context.Background(), m, req); err != nil {
			t.Fatal(err)
		}
		if got := r.body(t, 0)["reasoning_effort"]; got != tt.want {
			t.Errorf("%s/%s, no thinking %v: reasoning_effort = %v, want %v", tt.provider, tt.id, tt.noThinking, got, tt.want)
		}
	}
}
