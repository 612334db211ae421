package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// Composition builds the real agent process (package app) in scenario
// mode: deterministic sources, the scenario's scripted model wrapped by
// the runner's observer, no fsync (scenarios test behaviour, not
// durability), and the scenario's injected faults.
func Composition(_ context.Context, cfg Config) (System, error) {
	var m *scripted.Script
	if cfg.Script != nil {
		var err error
		if m, err = scripted.Parse(cfg.Script); err != nil {
			return nil, fmt.Errorf("model section: %w", err)
		}
	}
	hooks := &testhooks.Hooks{WrapModel: cfg.ObserveModel, OnQueued: cfg.ObserveQueued, StepGate: cfg.ObserveStep, NoSync: true, PanicOnBug: true, WorktreeGitEnv: GitEnv}
	ac := app.Config{
		DataDir: cfg.DataDir,
		Sources: cfg.Sources,
		Version: "scenario",
		Logger:  cfg.Logger,
		Testing: hooks,
		Sandbox: cfg.Sandbox.policy(cfg.Cwd),
		Prompt:  app.DeterministicPrompt(),

		ContextWindow: cfg.ContextWindow,
		MaxSteps:      cfg.MaxTurns,
		DigestSync:    true,
	}
	if est := cfg.TokenEstimates; len(est) > 0 {
		ac.EstimateTokens = func(c model.Caller, estimate int) int {
			if v, ok := est[c.ScriptKey][c.Call]; ok {
				return v
			}
			return estimate
		}
	}
	if m != nil {
		hooks.Model = scripted.New(m)
		ac.ModelChoices = modelChoices(m, cfg.Models)
	}
	if err := applyFaults(&ac, cfg.Faults); err != nil {
		return nil, err
	}
	if cfg.ExternalAgents {
		getenv, err := externalEnv(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		ac.Getenv = getenv
	}
	a, err := app.New(ac)
	if err != nil {
		return nil, err
	}
	return appSystem{a}, nil
}

// applyFaults passes the scenario's injected faults to the in-process
// subagent driver.
func applyFaults(ac *app.Config, f Faults) error {
	ac.Testing.Faults = inprocess.Faults{PublishedRunError: f.ChildPublishedRunError, DisposeError: f.ChildDisposeError}
	return nil
}

// appSystem adapts *app.App to System.
type appSystem struct{ a *app.App }

func (s appSystem) Store() *session.Store { return s.a.Store() }

func (s appSystem) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	err := s.a.Serve(ctx, in, out)
	return errors.Join(err, s.a.Close())
}

// FlushUpdates waits until the updates queued for every bound session are
// on the wire.
func (s appSystem) FlushUpdates(ctx context.Context) error {
	return s.a.Server.FlushUpdates(ctx)
}

// WaitIdle waits until the live agent of sessionID, if there is one, is
// idle.
func (s appSystem) WaitIdle(ctx context.Context, sessionID string) error {
	if ag, ok := s.a.Agents.Get(sessionID); ok {
		return ag.WaitIdle(ctx)
	}
	return nil
}
