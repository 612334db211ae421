package workspace

import (
	"context"
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Described gives a workspace tool what is fixed about it: its Spec
// (tool.Tool) and its ACP Kind (tool.Kind). A tool embeds it (or Located)
// and adds Execute.
type Described struct {
	spec model.ToolSpec
	kind string
}

// Describe returns the fixed part of a tool.
func Describe(name, description, parameters, kind string) Described {
	return Described{
		spec: model.ToolSpec{Name: name, Description: description, Parameters: json.RawMessage(parameters)},
		kind: kind,
	}
}

// Spec returns the tool's name, description and parameter schema.
func (d Described) Spec() model.ToolSpec { return d.spec }

// Kind returns the tool's ACP kind.
func (d Described) Kind() string { return d.kind }

// Locating returns d for a tool whose arguments name the files it
// touches: a tool.Locator whose Locations is locate.
func (d Described) Locating(locate func(json.RawMessage) []session.ToolLocation) Located {
	return Located{d, locate}
}

// Located is Described plus Locations (tool.Locator).
type Located struct {
	Described
	locate func(json.RawMessage) []session.ToolLocation
}

// Locations returns the files a call with args touches.
func (l Located) Locations(args json.RawMessage) []session.ToolLocation { return l.locate(args) }

// DecodeArgs decodes a call's arguments into v; bad arguments are an
// INVALID_ARGS tool error.
func DecodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return InvalidArgs("invalid arguments: %v", err)
	}
	return nil
}

// Target resolves a call's environment and its path argument.
func Target(ctx context.Context, r Resolver, inv tool.Invocation, path string) (Env, Path, error) {
	env, err := EnvFor(ctx, r, inv)
	if err != nil {
		return Env{}, Path{}, err
	}
	p, err := env.Resolve(path)
	if err != nil {
		return Env{}, Path{}, err
	}
	return env, p, nil
}
