package app

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
)

// A child's route is configured when a model has it, or another model of
// its provider does (not for scripted models); otherwise the error names
// the route and what is configured.
func TestCheckRoute(t *testing.T) {
	a := &App{Models: []ModelChoice{
		{Route: model.Route{Provider: "anthropic", Model: "claude-sonnet-4-5"}},
		{Route: model.Route{Provider: ScriptProvider, Model: "fast"}},
	}}
	tests := []struct {
		route model.Route
		ok    bool
	}{
		{model.Route{Provider: "anthropic", Model: "claude-sonnet-4-5"}, true},
		{model.Route{Provider: "anthropic", Model: "claude-opus-4-1"}, true},
		{model.Route{Provider: ScriptProvider, Model: "fast"}, true},
		{model.Route{Provider: ScriptProvider, Model: "smart"}, false},
		{model.Route{Provider: "openai", Model: "gpt-5"}, false},
	}
	for _, tt := range tests {
		err := a.checkRoute(tt.route)
		if (err == nil) != tt.ok {
			t.Errorf("%v: %v", tt.route, err)
		}
		if err != nil && (!strings.Contains(err.Error(), `"`+tt.route.Provider+"/"+tt.route.Model+`"`) || !strings.Contains(err.Error(), "anthropic/claude-sonnet-4-5, script/fast") || !strings.Contains(err.Error(), "inherit")) {
			t.Errorf("error %v", err)
		}
	}
}
