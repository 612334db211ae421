package app

// This file resolves the --model flag into a model.Model: "script:PATH"
// selects the keyless scripted model, PROVIDER/MODEL (deepseek/...,
// openai/..., openai-compatible/...) an OpenAI-compatible provider.

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/anthropic"
	"github.com/acp-agent/acp-agent/agent/model/openai"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
)

// ModelConfig is what a provider needs to build a model.
type ModelConfig struct {
	// Spec is the --model value, PROVIDER/MODEL.
	Spec      string
	BaseURL   string
	APIKeyEnv string
	Getenv    func(string) string
	Logger    *slog.Logger
	// IdleTimeout is Config.IdleTimeout.
	IdleTimeout time.Duration
}

// ProviderFunc builds the model of a PROVIDER/MODEL spec.
type ProviderFunc func(mc ModelConfig) (model.Model, error)

// ProviderKeyVars are the providers' default API key variables. They
// never reach a command, and the command line takes them (with
// --api-key-env's) out of the process's environment once read.
var ProviderKeyVars = []string{"OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY"}

// ScriptPrefix introduces a scripted model file in --model.
const ScriptPrefix = "script:"

// errNoModel is the explanation a prompt gets when no model is configured.
var errNoModel = fmt.Errorf("%w: start acp-agent with --model PROVIDER/MODEL "+
	"(deepseek/deepseek-chat with DEEPSEEK_API_KEY set, openai/gpt-4.1 with OPENAI_API_KEY set, "+
	"anthropic/claude-sonnet-4-5 with ANTHROPIC_API_KEY set, "+
	"or openai-compatible/NAME with --base-url) or with --model script:PATH for a scripted model; "+
	"the ACP_AGENT_MODEL environment variable works too", model.ErrNotConfigured)

var errNoScriptPath = errors.New("no script path")

// resolveModel returns the configured model, or (nil, explanation, nil)
// when none is configured. A bad spec or script is an error (the process
// should not start with a broken configuration).
func resolveModel(cfg Config) (model.Model, error, error) {
	if m := cfg.hooks().Model; m != nil {
		return m, nil, nil
	}
	spec := strings.TrimSpace(cfg.Model)
	switch {
	case spec == "":
		return nil, errNoModel, nil
	case strings.HasPrefix(spec, ScriptPrefix):
		path := strings.TrimPrefix(spec, ScriptPrefix)
		if path == "" {
			return nil, nil, model.ConfigErrorf(errNoScriptPath, "--model script:PATH needs a path")
		}
		script, err := scripted.Load(path)
		if err != nil {
			return nil, nil, fmt.Errorf("load the model script: %w", err)
		}
		return scripted.New(script), nil, nil
	}
	provider := cfg.Provider
	if provider == nil {
		provider = providerModel
	}
	mc := ModelConfig{Spec: spec, BaseURL: cfg.BaseURL, APIKeyEnv: cfg.APIKeyEnv, Getenv: cfg.Getenv, Logger: cfg.Logger, IdleTimeout: cfg.IdleTimeout}
	m, err := provider(mc)
	if k, ok := deferKey(mc, provider, err); ok {
		// Start anyway: the client is told which key to set (auth.go).
		cfg.Logger.Warn("model key missing; prompts need authentication", "model", spec, "env_var", k.missing.EnvVar)
		return k, nil, nil
	}
	if errors.Is(err, openai.ErrInvalidModelFlag) {
		return nil, nil, err // it quotes the spec already
	}
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", spec, err)
	}
	return m, nil, nil
}

// providerModel is the default ProviderFunc: Anthropic's Messages API for
// anthropic/MODEL, an OpenAI-compatible streaming provider otherwise. A
// missing base URL fails here, at start-up; a missing key
// (model.MissingKeyError) lets the agent start and ask for it (auth.go).
func providerModel(mc ModelConfig) (model.Model, error) {
	if id, ok := strings.CutPrefix(mc.Spec, anthropic.Provider+"/"); ok {
		return anthropicModel(mc, id)
	}
	cfg, err := openai.ConfigFromFlags(mc.Spec, mc.BaseURL, mc.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	cfg.Getenv, cfg.Logger, cfg.IdleTimeout = mc.Getenv, mc.Logger, mc.IdleTimeout
	return openai.New(cfg)
}

// CheckModelSpec checks the form of one --model value ("" is no model)
// without building the model: the providers' own checks (base URL, key)
// run when serving.
func CheckModelSpec(spec string) error {
	switch {
	case spec == "":
		return nil
	case strings.HasPrefix(spec, ScriptPrefix):
		if strings.TrimPrefix(spec, ScriptPrefix) == "" {
			return model.ConfigErrorf(errNoScriptPath, "--model script:PATH needs a path")
		}
		return nil
	case strings.HasPrefix(spec, anthropic.Provider+"/"):
		if strings.TrimPrefix(spec, anthropic.Provider+"/") == "" {
			return modelSpecError(spec, "missing model id after anthropic/")
		}
		return nil
	}
	if _, err := openai.ParseModelFlag(spec); err != nil {
		provider, id, ok := strings.Cut(spec, "/")
		switch {
		case !ok || id == "":
			return modelSpecError(spec, "want PROVIDER/MODEL")
		default:
			return modelSpecError(spec, fmt.Sprintf("unknown provider %q", provider))
		}
	}
	return nil
}

// modelSpecError explains a bad --model value with every form it may take.
func modelSpecError(spec, what string) error {
	return model.ConfigErrorf(openai.ErrInvalidModelFlag, "invalid --model value %q: %s; the forms are "+
		"anthropic/MODEL (ANTHROPIC_API_KEY, e.g. anthropic/claude-sonnet-4-5), "+
		"deepseek/MODEL (DEEPSEEK_API_KEY, e.g. deepseek/deepseek-chat), "+
		"openai/MODEL (OPENAI_API_KEY, e.g. openai/gpt-4.1), "+
		"openai-compatible/MODEL with --base-url, or script:PATH", spec, what)
}

// routeOf returns the route recorded on assistant messages for a
// PROVIDER/MODEL spec (empty for scripted or unconfigured models).
func routeOf(spec string) model.Route {
	if strings.HasPrefix(spec, ScriptPrefix) {
		return model.Route{}
	}
	if id, ok := strings.CutPrefix(strings.TrimSpace(spec), anthropic.Provider+"/"); ok && id != "" {
		return model.Route{Provider: anthropic.Provider, Model: id}
	}
	r, err := openai.ParseModelFlag(strings.TrimSpace(spec))
	if err != nil {
		return model.Route{}
	}
	return r
}

// EnvThinkingBudget, set to a number of tokens, turns on extended thinking
// for Anthropic models.
const EnvThinkingBudget = "ACP_AGENT_THINKING_BUDGET"

// anthropicModel builds anthropic/ID: the key from ANTHROPIC_API_KEY (or
// --api-key-env), the endpoint from --base-url when given.
func anthropicModel(mc ModelConfig, id string) (model.Model, error) {
	cfg := anthropic.Config{Model: id, BaseURL: mc.BaseURL, APIKeyEnv: mc.APIKeyEnv, Getenv: mc.Getenv, Logger: mc.Logger, IdleTimeout: mc.IdleTimeout}
	if v := strings.TrimSpace(mc.Getenv(EnvThinkingBudget)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s=%q: want a number of tokens", EnvThinkingBudget, v)
		}
		cfg.ThinkingBudget = n
	}
	return anthropic.New(cfg)
}
