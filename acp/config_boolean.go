package acp

// This file defines the boolean config option "sandbox" (ACP boolean
// config options, offered only to a client announcing
// clientCapabilities.session.configOptions.boolean, and only where the
// composition can sandbox commands): the person turns the command sandbox
// on or off for one session. Off, the session's local commands run
// unsandboxed (Options.UnsandboxedCommands), so in accept-edits mode they
// ask before running as they do without a sandbox; on, they run in the
// sandbox the settings describe (or the default one). The choice is
// recorded as an ignorable session/sandbox event (it survives a load and a
// restart) and announced as config_option_update, live and on replay.

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// ConfigSandbox is the id of the sandbox option.
const ConfigSandbox = "sandbox"

// TypeSessionSandbox records a session's sandbox choice.
const TypeSessionSandbox = "session/sandbox"

// SessionSandboxData is the payload of TypeSessionSandbox.
type SessionSandboxData struct {
	Enabled bool `json:"enabled"`
}

// offersSandboxOption reports whether the sandbox option is offered.
func (s *Server) offersSandboxOption() bool {
	return s.wire.booleanConfig.Load() && s.opts.SandboxCommands != nil && s.opts.UnsandboxedCommands != nil
}

// sandboxChoice is session b's recorded choice, if any.
func (s *Server) sandboxChoice(b *bound) (on, chosen bool) {
	if b == nil || b.sess == nil {
		return false, false
	}
	s.rootsMu.Lock()
	defer s.rootsMu.Unlock()
	if v, ok := s.sandboxes[b.id]; ok {
		return v, true
	}
	events, err := b.sess.Events()
	if err != nil {
		return false, false
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSessionSandbox {
			continue
		}
		if d, err := session.DecodeData[SessionSandboxData](events[i]); err == nil {
			if s.sandboxes == nil {
				s.sandboxes = map[string]bool{}
			}
			s.sandboxes[b.id] = d.Enabled
			return d.Enabled, true
		}
	}
	return false, false
}

// sandboxDefault is whether root session root's commands are sandboxed
// without a choice (the settings' or the process's sandbox).
func (s *Server) sandboxDefault(root, rootCwd string) bool {
	if s.opts.SandboxCommands == nil {
		return false
	}
	cmds := s.opts.SandboxCommands(s.policyFor(root, rootCwd).Sandbox())
	return sandboxed(cmds, rootCwd)
}

// sandboxOn is whether session b's commands run sandboxed now.
func (s *Server) sandboxOn(b *bound) bool {
	if on, ok := s.sandboxChoice(b); ok {
		return on
	}
	return s.sandboxDefault(b.id, b.sess.Header().Cwd)
}

// sandboxed reports whether cmds run commands in cwd in a sandbox.
func sandboxed(cmds workspace.Commands, cwd string) bool {
	return cmds != nil && workspace.SandboxOf(cmds, cwd) != ""
}

// sandboxOption renders the option.
func sandboxOption(on bool) acpsdk.SessionConfigOption {
	return acpsdk.SessionConfigOption{Boolean: &acpsdk.SessionConfigOptionBoolean{
		Id:           ConfigSandbox,
		Name:         "Sandbox",
		Description:  acpsdk.Ptr("Run commands in the sandbox: they may write only in the workspace"),
		CurrentValue: on,
	}}
}

// setSandbox records and announces session b's sandbox choice.
func (s *Server) setSandbox(ctx context.Context, b *bound, on bool) error {
	ev, err := b.sess.Append(TypeSessionSandbox, SessionSandboxData{Enabled: on}, session.Ignorable())
	if err == nil {
		err = s.makeDurable(ctx, b.id, ev.Seq)
	}
	if err != nil {
		return toRequestError(fmt.Errorf("record the sandbox choice of session %s: %w", b.id, err))
	}
	s.rootsMu.Lock()
	if s.sandboxes == nil {
		s.sandboxes = map[string]bool{}
	}
	s.sandboxes[b.id] = on
	s.rootsMu.Unlock()
	s.log.Info("session sandbox set", "session_id", b.id, "enabled", on)
	return toRequestError(s.flush(ctx, b))
}

// sandboxUpdate renders a session/sandbox event (translator).
func (t *translator) sandboxUpdate(ev session.Event) []acpsdk.SessionUpdate {
	if t.sandbox == nil {
		return nil
	}
	d, err := session.DecodeData[SessionSandboxData](ev)
	if err != nil {
		return nil
	}
	on := d.Enabled
	t.sandbox = &on
	return []acpsdk.SessionUpdate{t.configUpdate()}
}
