package model

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Model streams one model call.
type Model interface {
	// Stream starts the call. It yields chunks (text, reasoning, tool-call
	// deltas, usage, finish) and at most one error, after which it stops.
	// Cancelling ctx aborts the call promptly; the iterator then yields an
	// error wrapping ctx's cause.
	Stream(ctx context.Context, req Request) iter.Seq2[session.Chunk, error]
}

// Request is one model call.
type Request struct {
	// Caller identifies the calling session. The scripted model keys its
	// replies by Caller.ScriptKey and picks the reply by Caller.Call.
	Caller Caller
	// Route optionally overrides the model route (provider and model id),
	// for example from a continuable child's descriptor.
	Route     Route
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	// Notify, when set, receives transient reports of the call in
	// progress (a retry wait), for the person to see. It is called on the
	// goroutine consuming the stream and must be quick.
	Notify func(Notice) `json:"-"`
}

// Notice is a transient report of a model call in progress. It is not
// part of the answer and is not logged.
type Notice struct {
	Kind string // NoticeRetry
	// Message is a short text for people, e.g. "retrying in 4 s (HTTP 429)".
	Message string
	// Attempt is the attempt that failed (1-based); Delay the wait before
	// the next one; Status the HTTP status (0 without a response).
	Attempt int
	Delay   time.Duration
	Status  int
}

// NoticeRetry reports a failed attempt that will be retried after Delay.
const NoticeRetry = "retry"

// Notice sends n to r.Notify when one is set.
func (r Request) Notice(n Notice) {
	if r.Notify != nil {
		r.Notify(n)
	}
}

// Caller describes the session making a request.
type Caller struct {
	SessionID string
	// ScriptKey is "main" for top-level sessions and the delegation label
	// for subagent children.
	ScriptKey string
	// Call counts the model calls this session made before this one, over
	// its own log (after any inherited seed), so it survives restarts.
	Call int
}

// Route names a provider and a model.
type Route struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// Message is one model-visible message. Role is "user", "assistant" or
// "tool"; tool messages carry tool-result blocks.
type Message struct {
	Role    string
	Content []session.Block
}

// RoleTool marks a message carrying tool results.
const RoleTool = "tool"

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Finish reasons reported in a finish chunk.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool-calls"
	FinishLength        = "length"
	FinishContentFilter = "content-filter"
)

// ErrContextLength is wrapped by a provider's error when the request does
// not fit the model's context window; the loop answers it by compacting
// once and retrying.
var ErrContextLength = errors.New("request exceeds the model's context window")

// ErrNotConfigured is returned (wrapped) by a model that cannot serve
// requests because no real model was configured.
var ErrNotConfigured = errors.New("no model configured")

// FromSurface converts model-visible history into request messages.
//
// Consecutive user messages (not tool results) are merged into one: a turn
// that failed before the model answered leaves its user message without a
// reply, and providers that require alternating roles reject [user, user].
// The merge copies the blocks, so the history is never written through.
func FromSurface(history []session.SurfaceMessage) []Message {
	out := make([]Message, 0, len(history))
	for _, h := range history {
		role := h.Message.Role
		if h.Message.Source.Kind == session.SourceTool {
			role = RoleTool
		}
		if n := len(out); n > 0 && role == session.RoleUser && out[n-1].Role == session.RoleUser {
			prev := &out[n-1]
			merged := make([]session.Block, 0, len(prev.Content)+len(h.Message.Content))
			prev.Content = append(append(merged, prev.Content...), h.Message.Content...)
			continue
		}
		out = append(out, Message{Role: role, Content: h.Message.Content})
	}
	return out
}
