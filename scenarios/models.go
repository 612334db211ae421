package scenarios

// This file lets a scenario offer the model picker: a top-level "models"
// list of names (each model runs the scenario's script, with route
// script/NAME) and the set_model step (session/set_config_option).

import (
	"regexp"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/app"
)

// OpSetModel chooses a session's model (session/set_config_option).
const OpSetModel = "set_model"

// ScriptModelID is the model picker id of the scenario model NAME.
func ScriptModelID(name string) string { return app.ScriptProvider + "/" + name }

var modelName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func (p parser) models(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) < 2 {
		return nil, p.errf(n, "models", "must be a list of at least two model names")
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		name, err := p.str(item, "models")
		if err != nil {
			return nil, err
		}
		if !modelName.MatchString(name) || seen[name] {
			return nil, p.errf(item, "models", "model names must be distinct, lower case letters, digits and dashes")
		}
		seen[name] = true
		out = append(out, name)
	}
	return out, nil
}

// modelChoices builds one scripted model per name, each from the same
// script (the script picks replies by the session's call count, so a
// switch continues the script); nil with fewer than two names.
func modelChoices(s *scripted.Script, names []string) []app.ModelChoice {
	if len(names) < 2 {
		return nil
	}
	out := make([]app.ModelChoice, len(names))
	for i, name := range names {
		out[i] = app.ModelChoice{Route: model.Route{Provider: app.ScriptProvider, Model: name}, Model: scripted.New(s)}
	}
	return out
}
