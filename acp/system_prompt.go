package acp

// This file defines the client-provided system prompt (ACP systemPrompt on
// session/new, load and resume; sessionCapabilities.systemPrompt, append
// mode only): its text becomes a section of its own at the end of the
// session's system prompt (agent/prompt), recorded in the log as an
// ignorable session/client-system-prompt event, so a load, a resume or a
// restart keeps it. A load or resume that sends another one records it and
// rewrites the recorded system prompt's section (Options.RewriteSystemPrompt)
// before the session's agent is built. The SDK's request types have no
// field for it: session/new, load and resume are routed (protocol2026.go).

import (
	"context"
	"encoding/json"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TypeClientSystemPrompt records the system prompt a client gave a session.
const TypeClientSystemPrompt = "session/client-system-prompt"

// ClientSystemPromptData is the payload of TypeClientSystemPrompt.
type ClientSystemPromptData struct {
	Mode string `json:"mode"`
	Text string `json:"text"`
}

// SystemPrompt is a request's systemPrompt.
type SystemPrompt struct {
	Mode    string                `json:"mode"`
	Content []acpsdk.ContentBlock `json:"content"`
	Meta    map[string]any        `json:"_meta,omitempty"`
}

// SessionSystemPromptCapabilities is sessionCapabilities.systemPrompt ({}:
// append mode).
type SessionSystemPromptCapabilities struct {
	Meta map[string]any `json:"_meta,omitempty"`
}

// maxClientPrompt bounds a client's system prompt.
const maxClientPrompt = 64 << 10

// lifecycleExtra is what session/new, load and resume carry beyond the
// SDK's types.
type lifecycleExtra struct {
	SystemPrompt *SystemPrompt `json:"systemPrompt"`
}

// clientPromptText checks a request's systemPrompt and returns its text;
// nil for none. ACP: an agent that cannot apply it must refuse the request.
func clientPromptText(sp *SystemPrompt) (*string, error) {
	if sp == nil {
		return nil, nil
	}
	if sp.Mode != "append" {
		return nil, errorf(CodeInvalidParams, "systemPrompt mode %q is not supported: this agent takes mode \"append\" only (sessionCapabilities.systemPrompt.mode.override is not advertised)", sp.Mode)
	}
	var parts []string
	size := 0
	for _, b := range sp.Content {
		if b.Text == nil || b.Image != nil || b.Audio != nil || b.ResourceLink != nil || b.Resource != nil {
			return nil, errorf(CodeUnsupportedContent, "systemPrompt content must be text blocks")
		}
		size += len(b.Text.Text)
		parts = append(parts, b.Text.Text)
	}
	if size > maxClientPrompt {
		return nil, errorf(CodeInvalidParams, "systemPrompt is %d bytes, more than the %d this agent takes", size, maxClientPrompt)
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	return &text, nil
}

// clientPromptFromLog is the last client system prompt a log records.
func clientPromptFromLog(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeClientSystemPrompt {
			continue
		}
		if d, err := session.DecodeData[ClientSystemPromptData](events[i]); err == nil {
			return d.Text
		}
	}
	return ""
}

// ClientSystemPrompt returns the system prompt the client gave top-level
// session id, "" for none (or a session not bound here: a subagent has its
// own prompt).
func (s *Server) ClientSystemPrompt(ctx context.Context, id string) string {
	b := s.boundSession(id)
	if b == nil || b.sess == nil || b.readOnly {
		return ""
	}
	events, err := b.sess.Events()
	if err != nil {
		s.log.Warn("read the client's system prompt from the log", "session_id", id, "err", err)
		return ""
	}
	return clientPromptFromLog(events)
}

// decodeLifecycle decodes a routed session/new, load or resume request:
// the SDK's type (checked as the SDK checks it) and the extra fields.
func decodeLifecycle[T interface{ Validate() error }](params json.RawMessage, p T) (*string, error) {
	if err := json.Unmarshal(params, p); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if err := p.Validate(); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	var x lifecycleExtra
	if err := json.Unmarshal(params, &x); err != nil {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return clientPromptText(x.SystemPrompt)
}
