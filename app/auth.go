package app

// This file lets the agent start when a configured provider's API key is
// missing: the model is built again from the environment when the client
// authenticates (acp.Authenticator), and until then prompts are refused
// with AUTH_REQUIRED naming the variable, instead of the process exiting
// before initialize (which an editor shows only as "failed to start").

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// keyedModel is a provider model whose key was missing at start-up. It is
// safe for concurrent use.
type keyedModel struct {
	mc      ModelConfig
	build   ProviderFunc
	missing *model.MissingKeyError // the variable asked for (fixed)

	mu  sync.Mutex // guards m and err
	m   model.Model
	err error // the last build's error while m is nil
}

var _ model.Model = (*keyedModel)(nil)

// current returns the model, or why it cannot serve yet.
func (k *keyedModel) current() (model.Model, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m, k.err
}

// reload builds the model from the environment again (no-op once built).
func (k *keyedModel) reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m != nil {
		return nil
	}
	m, err := k.build(k.mc)
	if err != nil {
		k.err = err
		return err
	}
	k.m, k.err = m, nil
	return nil
}

// Stream implements model.Model: the built model's stream, or the
// missing-key error (AUTH_REQUIRED).
func (k *keyedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m, err := k.current()
	if m == nil {
		return func(yield func(session.Chunk, error) bool) { yield(session.Chunk{}, err) }
	}
	return m.Stream(ctx, req)
}

// deferKey returns a keyedModel when err says that spec's key is missing.
func deferKey(mc ModelConfig, build ProviderFunc, err error) (*keyedModel, bool) {
	var mk *model.MissingKeyError
	if !errors.As(err, &mk) {
		return nil, false
	}
	return &keyedModel{mc: mc, build: build, missing: mk, err: err}, true
}

// authState implements acp.Authenticator over the configured models: one
// env_var method per variable missing at start-up.
type authState struct {
	choices []ModelChoice
}

var _ acp.Authenticator = authState{}

// newAuth returns the Authenticator of choices, or nil when every key was
// present at start-up (nothing to advertise).
func newAuth(choices []ModelChoice) acp.Authenticator {
	for _, c := range choices {
		if _, ok := c.Model.(*keyedModel); ok {
			return authState{choices: choices}
		}
	}
	return nil
}

func (a authState) keyed() iter.Seq2[ModelChoice, *keyedModel] {
	return func(yield func(ModelChoice, *keyedModel) bool) {
		for _, c := range a.choices {
			if k, ok := c.Model.(*keyedModel); ok && !yield(c, k) {
				return
			}
		}
	}
}

// AuthMethods implements acp.Authenticator.
func (a authState) AuthMethods() []acp.AuthMethod {
	var out []acp.AuthMethod
	seen := map[string]bool{}
	for _, k := range a.keyed() {
		v := k.missing.EnvVar
		if seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, acp.AuthMethod{
			ID:   v,
			Name: fmt.Sprintf("%s API key", k.missing.Provider),
			Description: fmt.Sprintf("Set %s in the agent's environment (in the editor's agent server settings) and restart the agent; "+
				"authenticate reads the environment again.", v),
			Vars: []string{v},
		})
	}
	return out
}

// Ready implements acp.Authenticator: modelID is a model picker id, ""
// for the default model.
func (a authState) Ready(modelID string) error {
	for i, c := range a.choices {
		if (modelID == "" && i == 0) || (modelID != "" && c.ID() == modelID) {
			if k, ok := c.Model.(*keyedModel); ok {
				_, err := k.current()
				return err
			}
			return nil
		}
	}
	return nil
}

// Authenticate implements acp.Authenticator: every model waiting for
// variable methodID is built from the environment again.
func (a authState) Authenticate(ctx context.Context, methodID string) error {
	var errs []error
	known := false
	for _, k := range a.keyed() {
		if k.missing.EnvVar != methodID {
			continue
		}
		known = true
		errs = append(errs, k.reload())
	}
	if !known {
		return fmt.Errorf("%w %q", acp.ErrUnknownAuthMethod, methodID)
	}
	return errors.Join(errs...)
}

// KeyReady reports why the default model cannot serve a request (its API
// key is missing), or nil: exec checks it before it creates a session,
// so a run that cannot prompt leaves none behind.
func (a *App) KeyReady() error { return authState{choices: a.Models}.Ready("") }
