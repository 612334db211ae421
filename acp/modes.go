package acp

// This file defines session modes: the four modes a session offers
// (availableModes in session/new and session/load), session/set_mode, the
// durable record of a mode change in the session log, and its rendering as
// current_mode_update (live and on replay).

import (
	"context"
	"fmt"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Session modes. A child session (subagent) follows its root session's
// mode, narrowed (or, for the person's own definition, widened) by the
// permission mode its descriptor records (policy.ChildMode).
const (
	// ModeDefault asks before every edit and every command.
	ModeDefault = "default"
	// ModeAcceptEdits allows edits in the cwd without asking; commands ask.
	ModeAcceptEdits = "accept-edits"
	// ModePlan allows read-only tools only: edits and commands are refused
	// (MODE_FORBIDS).
	ModePlan = "plan"
	// ModeBypass asks for nothing, except paths outside the cwd.
	ModeBypass = "bypass"
)

// TypeSessionMode is the log event recording a mode change. It is appended
// ignorable, so builds that do not know it still read the log; the last
// one in a log is the session's mode.
const TypeSessionMode = "session/mode"

// SessionModeData is the payload of a session/mode event.
type SessionModeData struct {
	ModeID string `json:"modeId"`
}

// availableModes lists the modes in the order editors show them.
var availableModes = []acpsdk.SessionMode{
	{Id: ModeDefault, Name: "Default", Description: acpsdk.Ptr("Ask before every edit and every command")},
	{Id: ModeAcceptEdits, Name: "Accept edits", Description: acpsdk.Ptr("Edit files in the working directory without asking; ask before commands")},
	{Id: ModePlan, Name: "Plan", Description: acpsdk.Ptr("Read-only: look around and plan; no edits, no commands")},
	{Id: ModeBypass, Name: "Bypass permissions", Description: acpsdk.Ptr("Never ask, except for paths outside the working directory")},
}

func knownMode(id string) bool {
	for _, m := range availableModes {
		if string(m.Id) == id {
			return true
		}
	}
	return false
}

// gateState is the connection's permission state: each session's mode
// (cached from its log) and the decisions remembered with "always". Every
// entry is keyed by a bound root session and dropped when it is released
// (forget), so the maps hold only what the bound sessions need, however
// many children they had.
type gateState struct {
	// switching serializes mode and model switches (append, durable,
	// then in memory); never held by a permission decision.
	switching sync.Mutex
	mu        sync.Mutex
	// modes caches the mode of root sessions by id.
	modes map[string]string
	// always maps a root session id, then the requester (the root or a
	// child) and what the answer covers, to a remembered decision (true =
	// allow always, false = reject always).
	always map[string]map[string]bool
	// children caches what the descriptor of child sessions records (the
	// delegation label, the permission mode) by root id, then child id.
	children map[string]map[string]childRecord
}

// forget drops everything remembered about session id (it was released).
func (g *gateState) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.modes, id)
	delete(g.always, id)
	delete(g.children, id)
}

// modeOf returns the mode of bound session b, reading it from the log the
// first time.
func (s *Server) modeOf(b *bound) string {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if m, ok := s.gate.modes[b.id]; ok {
		return m
	}
	mode := ModeDefault
	if b.sess != nil {
		events, err := b.sess.Events()
		if err != nil {
			// Not cached: the next question reads the log again. Default
			// mode asks before every change, so nothing runs unasked.
			s.log.Warn("read the session mode from the log", "session_id", b.id, "err", err)
			return ModeDefault
		}
		mode = modeFromLog(events)
	}
	if s.gate.modes == nil {
		s.gate.modes = map[string]string{}
	}
	s.gate.modes[b.id] = mode
	return mode
}

// RootMode returns the permission mode in force now for the root session
// of session id (a child's root is found through its parents): the mode a
// child's definition is bounded by (policy.ChildMode). A root not bound
// to this connection decides in default mode, so that is its mode here.
func (s *Server) RootMode(ctx context.Context, id string) (string, error) {
	h, err := s.header(ctx, id)
	if err != nil {
		return "", err
	}
	root, err := s.rootOf(ctx, h)
	if err != nil {
		return "", err
	}
	b := s.boundSession(root.ID)
	if b == nil || b.readOnly {
		return ModeDefault, nil
	}
	return s.modeOf(b), nil
}

// modeFromLog returns the last recorded mode, or ModeDefault.
func modeFromLog(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSessionMode {
			continue
		}
		d, err := session.DecodeData[SessionModeData](events[i])
		if err == nil && knownMode(d.ModeID) {
			return d.ModeID
		}
	}
	return ModeDefault
}

// modeState is the modes field of a session/new or session/load answer;
// nil for a read-only session, whose mode cannot change.
func (s *Server) modeState(b *bound) *acpsdk.SessionModeState {
	if b.readOnly {
		return nil
	}
	return &acpsdk.SessionModeState{
		AvailableModes: availableModes,
		CurrentModeId:  acpsdk.SessionModeId(s.modeOf(b)),
	}
}

// SetSessionMode switches a session's mode. The change is recorded in the
// session log (so it survives session/load) and announced as
// current_mode_update before the answer. It takes effect for the next
// permission decision, also inside a running turn.
func (s *Server) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (resp acpsdk.SetSessionModeResponse, err error) {
	defer s.recoverTo("session/set_mode", &err)
	b, err := s.lookup(string(p.SessionId))
	if err != nil {
		return resp, toRequestError(err)
	}
	if b.readOnly {
		return resp, toRequestError(b.refuseChange("switched to another mode", "it follows its root session's mode"))
	}
	return resp, s.setMode(ctx, b, string(p.ModeId))
}

// setMode records and announces mode id as session b's mode, for
// session/set_mode and session/set_config_option alike; errors are already
// mapped for the client.
func (s *Server) setMode(ctx context.Context, b *bound, id string) error {
	if !knownMode(id) {
		names := make([]string, len(availableModes))
		for i, m := range availableModes {
			names[i] = string(m.Id)
		}
		return toRequestError(errorf(CodeInvalidParams, "unknown mode %q (available: %s)", id, strings.Join(names, ", ")))
	}
	// Durable first, then in force: a switch whose record fails leaves
	// the old mode deciding (a failed switch to bypass never loosens the
	// gate). switching keeps concurrent switches in the same order in the
	// log and in memory.
	s.gate.switching.Lock()
	defer s.gate.switching.Unlock()
	s.modeOf(b) // the cache holds the old mode until the switch is durable
	ev, aerr := b.sess.Append(TypeSessionMode, SessionModeData{ModeID: id}, session.Ignorable())
	if aerr != nil {
		return toRequestError(fmt.Errorf("record mode of session %s: %w", b.id, aerr))
	}
	if err := s.makeDurable(ctx, b.id, ev.Seq); err != nil {
		return toRequestError(fmt.Errorf("record mode of session %s: %w", b.id, err))
	}
	s.gate.mu.Lock()
	if s.gate.modes == nil {
		s.gate.modes = map[string]string{}
	}
	s.gate.modes[b.id] = id
	s.gate.mu.Unlock()
	s.log.Info("session mode set", "session_id", b.id, "mode", id)
	if err := s.flush(ctx, b); err != nil {
		return toRequestError(err)
	}
	return nil
}

// modeUpdate renders a session/mode event as current_mode_update and, for
// a session offering the mode as a config option, config_option_update.
func (t *translator) modeUpdate(ev session.Event) []acpsdk.SessionUpdate {
	d, err := session.DecodeData[SessionModeData](ev)
	if err != nil || !knownMode(d.ModeID) {
		return nil
	}
	t.mode = d.ModeID
	out := []acpsdk.SessionUpdate{{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{
		CurrentModeId: acpsdk.SessionModeId(d.ModeID),
	}}}
	if t.configModes {
		out = append(out, t.configUpdate())
	}
	return out
}

// makeDurable makes session id's log durable up to seq through
// Options.Durable before a record is shown or answered; without durable
// storage there is nothing to wait for.
func (s *Server) makeDurable(ctx context.Context, id string, seq int64) error {
	if d := s.opts.Durable; d != nil {
		return d(ctx, id, seq)
	}
	return nil
}
