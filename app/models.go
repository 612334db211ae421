package app

// This file resolves several configured models (--model repeated, or
// comma-separated in ACP_AGENT_MODEL) into the model picker: each model
// has a distinct route, the agent's model dispatches each request to the
// model of its route, and a top-level session's route follows the choice
// the client made with session/set_config_option (acp.Server.SessionModel),
// from the next model request on.

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// ModelChoice is one configured model.
type ModelChoice struct {
	// Route identifies the model; with several models each has its own,
	// and its "PROVIDER/MODEL" form is the model's id in the picker.
	Route model.Route
	// Name is what editors show; "" means Route.Model.
	Name  string
	Model model.Model
}

// Images reports whether the choice's model takes image input.
func (c ModelChoice) Images() bool { return c.Model != nil && model.AcceptsImages(c.Model) }

// ID is the choice's id in the model picker: PROVIDER/MODEL.
func (c ModelChoice) ID() string { return c.Route.Provider + "/" + c.Route.Model }

// ScriptProvider is the provider name of scripted models in routes when
// several models are configured: script:PATH becomes script/NAME, NAME
// being the file name without its extension.
const ScriptProvider = "script"

// modelSpecs splits a Model value (one spec or several, comma-separated).
func modelSpecs(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolveModels returns the configured models, the default first; with
// none, the explanation prompts get. Config.ModelChoices (tests,
// scenarios) wins over the test hooks' model, which wins over Model.
func resolveModels(cfg Config) ([]ModelChoice, error, error) {
	if len(cfg.ModelChoices) > 0 {
		return checkChoices(cfg.ModelChoices)
	}
	specs := modelSpecs(cfg.Model)
	if cfg.hooks().Model != nil || len(specs) < 2 {
		one := cfg
		if len(specs) == 1 {
			one.Model = specs[0]
		}
		m, why, err := resolveModel(one)
		if m == nil {
			return nil, why, err
		}
		return []ModelChoice{{Route: routeOf(one.Model), Model: m}}, nil, nil
	}
	choices := make([]ModelChoice, 0, len(specs))
	for _, spec := range specs {
		one := cfg
		one.Model = spec
		m, _, err := resolveModel(one)
		if err != nil {
			return nil, nil, err
		}
		route := routeOf(spec)
		if strings.HasPrefix(spec, ScriptPrefix) {
			name := filepath.Base(strings.TrimPrefix(spec, ScriptPrefix))
			route = model.Route{Provider: ScriptProvider, Model: strings.TrimSuffix(name, filepath.Ext(name))}
		}
		choices = append(choices, ModelChoice{Route: route, Model: m})
	}
	return checkChoices(choices)
}

var errBadChoices = errors.New("bad model choices")

// checkChoices rejects several models without distinct routes.
func checkChoices(choices []ModelChoice) ([]ModelChoice, error, error) {
	if len(choices) < 2 {
		return choices, nil, nil
	}
	seen := map[string]bool{}
	for _, c := range choices {
		if c.Model == nil || c.Route.Provider == "" || c.Route.Model == "" {
			return nil, nil, model.ConfigErrorf(errBadChoices, "model %q: several models need a model and a PROVIDER/MODEL route each", c.ID())
		}
		if seen[c.ID()] {
			return nil, nil, model.ConfigErrorf(errBadChoices, "model %q is configured twice", c.ID())
		}
		seen[c.ID()] = true
	}
	return choices, nil, nil
}

// pickerOptions are the models offered to clients (acp.Options.Models).
func pickerOptions(choices []ModelChoice) []acp.ModelOption {
	if len(choices) < 2 {
		return nil
	}
	out := make([]acp.ModelOption, len(choices))
	for i, c := range choices {
		name := c.Name
		if name == "" {
			name = c.Route.Model
		}
		out[i] = acp.ModelOption{ID: c.ID(), Name: name, Description: "provider " + c.Route.Provider}
	}
	return out
}

// routedModel dispatches each request to the configured model of its
// route. A route no configured model has (a child descriptor naming
// another model of a provider) goes to the first model of that provider,
// else to the default, which decides whether it can serve it.
type routedModel struct {
	choices []ModelChoice
}

func (r routedModel) pick(route model.Route) model.Model {
	for _, c := range r.choices {
		if c.Route == route {
			return c.Model
		}
	}
	for _, c := range r.choices {
		if c.Route.Provider == route.Provider {
			return c.Model
		}
	}
	return r.choices[0].Model
}

// Stream implements model.Model.
func (r routedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return r.pick(req.Route).Stream(ctx, req)
}

// defaultRoute is the route of the default model (empty for a single
// scripted or unconfigured model).
func (a *App) defaultRoute() model.Route {
	if len(a.Models) == 0 {
		return model.Route{}
	}
	return a.Models[0].Route
}

// sessionRoute returns a function giving top-level session id's current
// route (its model picker choice); nil with fewer than two models.
func (a *App) sessionRoute(id string) func() model.Route {
	if len(a.Models) < 2 {
		return nil
	}
	return func() model.Route {
		if a.Server == nil {
			return model.Route{}
		}
		cur := a.Server.SessionModel(id)
		for _, c := range a.Models {
			if c.ID() == cur {
				return c.Route
			}
		}
		return model.Route{}
	}
}
