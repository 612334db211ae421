package agent

// This file keeps the session's system prompt: the one recorded in its
// log (session/system-prompt) when there is one, else the one the
// Options build, recorded before the first model request.

import (
	"context"

	"github.com/acp-agent/acp-agent/agent/session"
)

// systemState is loop-goroutine state (see Agent's loop fields).
type systemState struct {
	text     string
	recorded bool
}

// loadSystem reads the recorded prompt of the own suffix (after the
// seed: a forked child's seed holds its parent's prompt, not its own).
func (a *Agent) loadSystem(own []session.Event) {
	text, ok, err := session.RecordedSystemPrompt(own)
	if err != nil {
		a.log.Warn("recorded system prompt unreadable; assembling a new one", "err", err)
		return
	}
	a.system = systemState{text: text, recorded: ok}
}

// ensureSystem makes sure the session has its system prompt before a
// model request: with Options.SystemPrompt set and nothing recorded yet,
// it assembles the prompt once and appends it to the log (which the
// checkpoint that follows makes durable with the step). Without
// SystemPrompt the static Options.System is used and nothing is recorded.
func (a *Agent) ensureSystem(ctx context.Context) error {
	if a.system.recorded {
		return nil
	}
	if a.opts.SystemPrompt == nil {
		a.system.text = a.opts.System
		return nil
	}
	text := a.opts.SystemPrompt(ctx, a.opts.Tools.Specs())
	if _, err := a.sess.Append(session.TypeSystemPrompt, session.SystemPromptData{Text: text}); err != nil {
		return err
	}
	a.system = systemState{text: text, recorded: true}
	return nil
}

// startPrepare starts Options.PrepareSystem on its own goroutine when the
// prompt will have to be assembled (nothing recorded). It runs under the
// agent's lifetime, so Close stops it; a.prepared tells Close it returned.
func (a *Agent) startPrepare() {
	if a.system.recorded || a.opts.SystemPrompt == nil || a.opts.PrepareSystem == nil || a.initErr != nil {
		return
	}
	a.prepared = make(chan struct{})
	go func() {
		defer close(a.prepared)
		a.opts.PrepareSystem(a.life)
	}()
}
