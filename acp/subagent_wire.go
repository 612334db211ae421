package acp

// This file defines the ACP v1 subagent-session shapes (stable since
// 2026-11-20; in the unstable file of the schema the Go SDK v0.13.0
// predates, so the SDK has no type for them): the subagent_update
// announcement and patch, its state snapshot (StateUpdate), the child's
// capabilities, and the session_message / session_message_chunk pair that
// carries messages between a parent and its child. They are sent as raw
// session/update payloads (sendRawTo); tests check every one against the
// schema (internal/acpschema).

import (
	"encoding/json"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Session update discriminators of the subagent shapes.
const (
	UpdateSubagent            = "subagent_update"
	UpdateSessionMessage      = "session_message"
	UpdateSessionMessageChunk = "session_message_chunk"
)

// SubagentUpdate announces a child session on its immediate parent (the
// first one for a sessionId) or patches what an earlier one said: an
// omitted field is unchanged (we never send null, so nothing is cleared).
type SubagentUpdate struct {
	SessionID             string                       `json:"sessionId"`
	Title                 string                       `json:"title,omitempty"`
	Description           string                       `json:"description,omitempty"`
	Capabilities          *SubagentSessionCapabilities `json:"capabilities,omitempty"`
	State                 *StateUpdate                 `json:"state,omitempty"`
	Cwd                   string                       `json:"cwd,omitempty"`
	AdditionalDirectories []string                     `json:"additionalDirectories,omitempty"`
	Meta                  map[string]any               `json:"_meta,omitempty"`
}

// SubagentSessionCapabilities are the mutations a client may make on a
// child: Cancel set (to {}) permits session/cancel on its id.
type SubagentSessionCapabilities struct {
	Cancel *struct{}      `json:"cancel,omitempty"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// CanCancel reports whether the capabilities permit session/cancel.
func (c *SubagentSessionCapabilities) CanCancel() bool { return c != nil && c.Cancel != nil }

// Child states (StateUpdate.State).
const (
	StateRunning        = "running"
	StateIdle           = "idle"
	StateRequiresAction = "requires_action"
	StateUnknown        = "unknown"
)

// Idle stop reasons beyond acpsdk.StopReason's: "error" carries Error.
const StopReasonError = "error"

// StateUpdate is a whole-object snapshot of a child's foreground work.
// StopReason, Error and Usage belong to the idle state only.
type StateUpdate struct {
	State      string         `json:"state"`
	StopReason string         `json:"stopReason,omitempty"`
	Error      *StopError     `json:"error,omitempty"`
	Usage      *Usage         `json:"usage,omitempty"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// StopError is the JSON-RPC error object of an idle state whose stop
// reason is "error".
type StopError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Usage is the token usage of a child's completed foreground work.
type Usage struct {
	TotalTokens       int64  `json:"totalTokens"`
	InputTokens       int64  `json:"inputTokens"`
	OutputTokens      int64  `json:"outputTokens"`
	ThoughtTokens     *int64 `json:"thoughtTokens,omitempty"`
	CachedReadTokens  *int64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *int64 `json:"cachedWriteTokens,omitempty"`
}

// Running is the running state.
func Running() *StateUpdate { return &StateUpdate{State: StateRunning} }

// RequiresAction is the state of a child blocked on a permission question.
func RequiresAction() *StateUpdate { return &StateUpdate{State: StateRequiresAction} }

// Unknown is the state of a child whose activity cannot be observed (its
// process is gone and its log does not say how it ended).
func Unknown() *StateUpdate { return &StateUpdate{State: StateUnknown} }

// Idle is the idle state with stop reason stop ("" for none) and usage
// (nil: not reported).
func Idle(stop string, usage *Usage) *StateUpdate {
	return &StateUpdate{State: StateIdle, StopReason: stop, Usage: usage}
}

// IdleError is the idle state of a child whose work failed.
func IdleError(code int, message string) *StateUpdate {
	return &StateUpdate{State: StateIdle, StopReason: StopReasonError, Error: &StopError{Code: code, Message: message}}
}

// SessionMessage is an upsert of a message between two sessions, keyed by
// MessageID within the transcript of the session it is sent on.
type SessionMessage struct {
	MessageID          string                `json:"messageId"`
	SenderSessionID    string                `json:"senderSessionId,omitempty"`
	RecipientSessionID string                `json:"recipientSessionId,omitempty"`
	SenderMessageID    string                `json:"senderMessageId,omitempty"`
	RecipientMessageID string                `json:"recipientMessageId,omitempty"`
	Content            []acpsdk.ContentBlock `json:"content,omitempty"`
	Meta               map[string]any        `json:"_meta,omitempty"`
}

// SessionMessageChunk appends one content block to message MessageID.
type SessionMessageChunk struct {
	MessageID string              `json:"messageId"`
	Content   acpsdk.ContentBlock `json:"content"`
	Meta      map[string]any      `json:"_meta,omitempty"`
}

// rawUpdate is v as a session/update payload with discriminator kind.
func rawUpdate(kind string, v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["sessionUpdate"] = kind
	return m, nil
}

// Update returns u as a session/update payload.
func (u SubagentUpdate) Update() (map[string]any, error) { return rawUpdate(UpdateSubagent, u) }

// Update returns m as a session/update payload.
func (m SessionMessage) Update() (map[string]any, error) { return rawUpdate(UpdateSessionMessage, m) }

// Update returns c as a session/update payload.
func (c SessionMessageChunk) Update() (map[string]any, error) {
	return rawUpdate(UpdateSessionMessageChunk, c)
}
