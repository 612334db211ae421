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
	// NoThinking asks for an answer without extended thinking
	// (reasoning), where the model can switch it off (ThinkingSwitch):
	// the session's person turned thinking off. Other models ignore it;
	// the zero value keeps the model's configured thinking.
	NoThinking bool
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

// ErrStreamBroken is matched (errors.Is) by a provider's error when the
// answer stream stalled (the idle timeout) or was cut after the response
// opened, before the model finished: the same request sent again may
// succeed. The agent loop then records the partial reply as interrupted,
// leaves it out of the model's view and sends the request once more.
var ErrStreamBroken = errors.New("the answer stream broke off before the model finished")

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

// Notes the model view adds to the history (FromSurface); the log keeps
// the messages as they were shown.
const (
	// InterruptedNote ends an interrupted reply, so the model does not
	// take it for a complete answer.
	InterruptedNote = "[This reply was interrupted before it was complete.]"
	// UnansweredNote precedes a message that follows one the model never
	// answered (the request failed or was cancelled).
	UnansweredNote = "[The request with the message above failed or was interrupted before a complete reply; the conversation continues below.]"
)

// FromSurface converts model-visible history into request messages.
//
// Consecutive user messages (not tool results) are merged into one: a turn
// that failed before the model answered leaves its user message without a
// reply, and providers that require alternating roles reject [user, user].
// A message the model never answered (SurfaceMessage.Unanswered) is
// carried on only with UnansweredNote before the next user message. An
// interrupted reply ends with InterruptedNote; one with no text (only
// reasoning, or tool calls that were never complete) is left out, and the
// next user message gets UnansweredNote. The merge copies the blocks, so
// the history is never written through.
func FromSurface(history []session.SurfaceMessage) []Message {
	out := make([]Message, 0, len(history))
	note := false // the next user message follows an unanswered one
	for _, h := range history {
		role := h.Message.Role
		if h.Message.Source.Kind == session.SourceTool {
			role = RoleTool
		}
		content := h.Message.Content
		if role == session.RoleAssistant && h.Interrupted {
			if !hasText(content) {
				note = true
				continue
			}
			content = append(append(make([]session.Block, 0, len(content)+1), content...), session.Text(InterruptedNote))
		}
		if role == session.RoleUser && note {
			content = append(append(make([]session.Block, 0, len(content)+1), session.Text(UnansweredNote)), content...)
		}
		if role != RoleTool {
			note = false
		}
		if h.Unanswered {
			note = true
		}
		if n := len(out); n > 0 && role == session.RoleUser && out[n-1].Role == session.RoleUser {
			prev := &out[n-1]
			merged := make([]session.Block, 0, len(prev.Content)+len(content))
			prev.Content = append(append(merged, prev.Content...), content...)
			continue
		}
		out = append(out, Message{Role: role, Content: content})
	}
	return out
}

func hasText(bs []session.Block) bool {
	for _, b := range bs {
		if b.Type == session.BlockText && b.Text != "" {
			return true
		}
	}
	return false
}
