package acp

// This file defines the boolean config option "thinking" (ACP boolean
// config options, offered only to a client announcing
// clientCapabilities.session.configOptions.boolean, and only while the
// session's model thinks and can be asked not to: Options.Thinking): the
// person turns the model's extended thinking (reasoning) on or off for one
// session. On is the default, the model's configured thinking; off, each
// model request of the session asks for an answer without it
// (model.Request.NoThinking, read through SessionNoThinking). The choice is
// recorded as an ignorable session/thinking event, so it survives a load
// and a restart, and is announced as config_option_update, live and on
// replay. Delegated children think as their model is configured to.

import (
	"context"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// ConfigThinking is the id of the thinking option.
const ConfigThinking = "thinking"

// TypeSessionThinking records a session's thinking choice.
const TypeSessionThinking = "session/thinking"

// SessionThinkingData is the payload of TypeSessionThinking.
type SessionThinkingData struct {
	Enabled bool `json:"enabled"`
}

// offersThinkingOption reports whether the thinking option is offered to
// top-level session b.
func (s *Server) offersThinkingOption(b *bound) bool {
	return s.wire.booleanConfig.Load() && s.opts.Thinking != nil && b != nil && b.sess != nil && !b.readOnly &&
		b.sess.Header().Origin != session.OriginSubagent && s.opts.Thinking(b.id)
}

// SessionNoThinking reports whether top-level session id's person turned
// thinking off: its last recorded choice (whichever client made it), off
// by default. The agent asks it before each model request, so a switch
// applies from the next request.
func (s *Server) SessionNoThinking(id string) bool {
	s.modelChoice.mu.Lock()
	defer s.modelChoice.mu.Unlock()
	if on, ok := s.modelChoice.thinking[id]; ok {
		return !on
	}
	on := true
	if s.opts.Sessions == nil {
		return false
	}
	if sess, ok := s.opts.Sessions.Get(id); ok {
		events, err := sess.Events()
		if err != nil {
			// Not cached: the next request reads the log again.
			s.log.Warn("read the session's thinking choice from the log", "session_id", id, "err", err)
			return false
		}
		on = thinkingFromLog(events)
	}
	if s.modelChoice.thinking == nil {
		s.modelChoice.thinking = map[string]bool{}
	}
	s.modelChoice.thinking[id] = on
	return !on
}

// thinkingFromLog is the last recorded thinking choice, on without one.
func thinkingFromLog(events []session.Event) bool {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSessionThinking {
			continue
		}
		if d, err := session.DecodeData[SessionThinkingData](events[i]); err == nil {
			return d.Enabled
		}
	}
	return true
}

// thinkingOption renders the option.
func thinkingOption(on bool) acpsdk.SessionConfigOption {
	return acpsdk.SessionConfigOption{Boolean: &acpsdk.SessionConfigOptionBoolean{
		Id:           ConfigThinking,
		Name:         "Thinking",
		Description:  acpsdk.Ptr("Let the model think before it answers (extended thinking)"),
		CurrentValue: on,
	}}
}

// thinkingValue is the option's value for session b, nil when it is not
// offered.
func (s *Server) thinkingValue(b *bound) *bool {
	if !s.offersThinkingOption(b) {
		return nil
	}
	on := !s.SessionNoThinking(b.id)
	return &on
}

// setThinking records and announces session b's thinking choice: durable
// first, then in force (as for the model).
func (s *Server) setThinking(ctx context.Context, b *bound, on bool) error {
	s.SessionNoThinking(b.id) // fill the cache from the log first
	ev, err := b.sess.Append(TypeSessionThinking, SessionThinkingData{Enabled: on}, session.Ignorable())
	if err == nil {
		err = s.makeDurable(ctx, b.id, ev.Seq)
	}
	if err != nil {
		return toRequestError(fmt.Errorf("record the thinking choice of session %s: %w", b.id, err))
	}
	s.modelChoice.mu.Lock()
	s.modelChoice.thinking[b.id] = on
	s.modelChoice.mu.Unlock()
	s.log.Info("session thinking set", "session_id", b.id, "enabled", on)
	return toRequestError(s.flush(ctx, b))
}

// thinkingUpdate renders a session/thinking event (translator).
func (t *translator) thinkingUpdate(ev session.Event) []acpsdk.SessionUpdate {
	if t.thinking == nil {
		return nil
	}
	d, err := session.DecodeData[SessionThinkingData](ev)
	if err != nil {
		return nil
	}
	on := d.Enabled
	t.thinking = &on
	return []acpsdk.SessionUpdate{t.configUpdate()}
}
