package session

// This file defines the typed payloads of the event vocabulary. Field names
// follow reference-scenarios.md §f.

import "encoding/json"

// Block is one content block. Type is one of "text", "reasoning",
// "tool-call", "tool-result", "resource-link", "resource" or "image"; only
// the fields of that type are set.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool-call
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// tool-result
	ToolCallID string  `json:"toolCallId,omitempty"`
	Content    []Block `json:"content,omitempty"`
	IsError    bool    `json:"isError,omitempty"`
	// resource-link / resource (Text: the linked file's numbered lines as
	// read when the prompt arrived, or the embedded text) / image
	URI      string `json:"uri,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// StartLine and EndLine (1-based, inclusive) locate an embedded
	// selection in its file; 0 when the resource is a whole file.
	StartLine int `json:"startLine,omitempty"`
	EndLine   int `json:"endLine,omitempty"`
	// Data is an image's base64 bytes, or a reasoning block's opaque
	// (redacted) form that some providers require back verbatim.
	Data string `json:"data,omitempty"`
	// Signature authenticates a reasoning block for providers that verify
	// thinking sent back across turns (Anthropic).
	Signature string `json:"signature,omitempty"`
}

// Block types.
const (
	BlockText         = "text"
	BlockReasoning    = "reasoning"
	BlockToolCall     = "tool-call"
	BlockToolResult   = "tool-result"
	BlockResourceLink = "resource-link"
	BlockResource     = "resource"
	BlockImage        = "image"
)

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// JoinText concatenates the texts of the text blocks, separated by sep.
func JoinText(blocks []Block, sep string) string {
	out := ""
	first := true
	for _, b := range blocks {
		if b.Type != BlockText {
			continue
		}
		if !first {
			out += sep
		}
		out += b.Text
		first = false
	}
	return out
}

// Source says where a user-role message came from
// (subagent-contract.md §1.2).
type Source struct {
	Kind            string `json:"kind"`
	Form            string `json:"form,omitempty"`
	Summary         string `json:"summary,omitempty"`
	SenderSessionID string `json:"senderSessionId,omitempty"`
	Plugin          string `json:"plugin,omitempty"`
	CallID          string `json:"callId,omitempty"`
	Provider        string `json:"provider,omitempty"`
	Model           string `json:"model,omitempty"`
	// Digest is a settled child's final digest (subagent-settled notices):
	// its delegation's tool call shows it, live and on replay. Models do
	// not see it.
	Digest string `json:"digest,omitempty"`
	// Stop is a settled child's stop reason (subagent-settled notices).
	Stop string `json:"stop,omitempty"`
}

// Source kinds.
const (
	SourceUser            = "user"
	SourceCoordinator     = "coordinator"
	SourceSubagentReport  = "subagent-report"
	SourceSubagentSettled = "subagent-settled"
	SourcePlugin          = "plugin"
	SourceTool            = "tool"
	SourceModel           = "model"
)

// Message is a complete message as recorded in user/message,
// assistant/message and tool/result payloads.
type Message struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Content []Block `json:"content"`
	Source  Source  `json:"source"`
	// ChildUsage, on a subagent-settled notice, is what the settled child
	// and its descendants spent, as the subagent runtime's usage JSON
	// (agent/budget.Usage): the parent's usage display adds it, live and
	// on replay alike. Models do not see it.
	ChildUsage json.RawMessage `json:"childUsage,omitempty"`
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// TurnData is the payload of turn/start.
type TurnData struct {
	Turn int `json:"turn"`
}

// StepData is the payload of step/start and step/end.
type StepData struct {
	Turn int `json:"turn"`
	Step int `json:"step"`
}

// TurnEndData is the payload of turn/end.
type TurnEndData struct {
	Turn   int           `json:"turn"`
	Reason TurnEndReason `json:"reason"`
}

// TurnEndReason says why a turn ended. Kind is one of the TurnEnd*
// constants; Reason is set for aborted turns, Error for failed ones.
type TurnEndReason struct {
	Kind   string       `json:"kind"`
	Reason *AbortReason `json:"reason,omitempty"`
	Error  *ErrorInfo   `json:"error,omitempty"`
	// Detail says which limit ended a "budget" or "timeout" turn, for
	// people ("used 1200 tokens of its limit of 1000 (maxTokens)").
	Detail string `json:"detail,omitempty"`
}

// Turn end kinds. TurnEndInterrupted is only synthesized by crash recovery;
// TurnEndMaxSteps ends a turn that hit the per-turn step limit.
const (
	TurnEndCompleted   = "completed"
	TurnEndAborted     = "aborted"
	TurnEndBlocked     = "blocked"
	TurnEndError       = "error"
	TurnEndMaxTokens   = "max-tokens"
	TurnEndInterrupted = "interrupted"
	TurnEndMaxSteps    = "max-steps"
	// TurnEndBudget ends a turn whose session (or tree) reached a
	// spending limit (tokens, cost) before its next model request;
	// TurnEndTimeout one that ran out of its time limit.
	TurnEndBudget  = "budget"
	TurnEndTimeout = "timeout"
)

// AbortReason says who aborted a turn: "user", "parent", "hook",
// "disposed", "shutdown".
type AbortReason struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// ErrorInfo is a serializable error.
type ErrorInfo struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	Name    string `json:"name,omitempty"`
}

// UserMessageData is the payload of user/message: the message itself.
type UserMessageData = Message

// AssistantChunkData is the payload of assistant/chunk: one raw stream
// chunk, kept so a turn can be replayed and streamed.
type AssistantChunkData struct {
	Turn  int   `json:"turn"`
	Step  int   `json:"step"`
	Chunk Chunk `json:"chunk"`
}

// Chunk is one streamed model chunk as recorded in the log. Type is
// "text-delta", "reasoning-delta", "tool-call-delta", "usage" or "finish".
type Chunk struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool-call-delta: Index identifies the call within the step; ID and Name
	// arrive on the first delta of a call, Arguments accumulates.
	Index     int    `json:"index,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Usage     *Usage `json:"usage,omitempty"`
	Finish    string `json:"finish,omitempty"`
	// reasoning-delta: Signature closes the current reasoning block with
	// its provider signature; Data is a redacted reasoning block.
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Chunk types.
const (
	ChunkText      = "text-delta"
	ChunkReasoning = "reasoning-delta"
	ChunkToolCall  = "tool-call-delta"
	ChunkUsage     = "usage"
	ChunkFinish    = "finish"
)

// Usage counts tokens of one model call, provider-neutral. InputTokens
// counts every input token of the request, cached ones included;
// CacheReadTokens says how many of them were read from the provider's
// prompt cache and CacheWriteTokens how many were written to it (providers
// that bill cache writes). The cache fields are omitted when zero, so logs
// written before they existed read the same.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	// CacheReadTokens and CacheWriteTokens are the prompt tokens served
	// from and written to the provider's prompt cache (InputTokens
	// counts all prompt tokens, cached ones included).
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
	// ReasoningTokens is how many of OutputTokens were the model's
	// reasoning (providers that report it); omitted when zero.
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
}

// AssistantMessageData is the payload of assistant/message.
type AssistantMessageData struct {
	Turn        int     `json:"turn"`
	Step        int     `json:"step"`
	Message     Message `json:"message"`
	Usage       *Usage  `json:"usage,omitempty"`
	Finish      string  `json:"finish,omitempty"`
	Interrupted bool    `json:"interrupted,omitempty"`
	// Retried marks an interrupted partial reply whose request was sent
	// again without it (the stream stalled or was cut): it stays in the
	// log as shown, but is not part of the model-visible history
	// (History leaves it out), and the retry was another model call.
	Retried bool `json:"retried,omitempty"`
	// Error says why an interrupted reply broke off, when the model call
	// failed.
	Error *ErrorInfo `json:"error,omitempty"`
}

// ToolCallData is the payload of tool/call.
type ToolCallData struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	CallID    string `json:"callId"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolResultData is the payload of tool/result. Message holds one
// tool-result block; Raw is the tool's structured value (ACP rawOutput).
type ToolResultData struct {
	Turn    int        `json:"turn"`
	Step    int        `json:"step"`
	Message Message    `json:"message"`
	Error   *ErrorInfo `json:"error,omitempty"`
	Raw     any        `json:"raw,omitempty"`
	// Display is how editors show the finished call (diffs, locations, an
	// embedded terminal, _meta). It is recorded so that a replay shows what
	// the live call showed.
	Display *ToolDisplay `json:"display,omitempty"`
}

// ToolDisplay is the editor-facing presentation of a tool call: the ACP
// tool-call content and locations, and _meta. Every field is optional.
type ToolDisplay struct {
	// Locations are the files (and lines) the call touches, for
	// follow-along in the editor.
	Locations []ToolLocation `json:"locations,omitempty"`
	// Diffs are file modifications (ACP "diff" content).
	Diffs []ToolDiff `json:"diffs,omitempty"`
	// TerminalID embeds a client terminal (ACP "terminal" content).
	TerminalID string `json:"terminalId,omitempty"`
	// Meta goes under the update's _meta.
	Meta map[string]any `json:"meta,omitempty"`
	// Text is shown before the result (a delegation's final digest of
	// what its child did).
	Text string `json:"text,omitempty"`
}

// ToolLocation is a file a tool call touches; Line is 1-based, 0 unknown.
type ToolLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// ToolDiff is one file modification. OldText is nil for a new file.
type ToolDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText,omitempty"`
	NewText string  `json:"newText"`
}

// InboxSplicedData is the payload of agent/inbox/spliced: a mutation of the
// agent inbox. Target is "next-turn" or "next-step"; an insert has Inserted
// and no RemovedCount; a claim has RemovedCount and no Inserted; Outcome is
// "canceled" when items were dropped unrun.
type InboxSplicedData struct {
	Target       string    `json:"target"`
	Start        int       `json:"start"`
	RemovedCount *int      `json:"removedCount,omitempty"`
	Inserted     []Message `json:"inserted"`
	Outcome      string    `json:"outcome,omitempty"`
}

// Inbox targets.
const (
	InboxNextTurn = "next-turn"
	InboxNextStep = "next-step"
)

// TitleData is the payload of session/title (log-only, latest wins).
type TitleData struct {
	Title       string  `json:"title"`
	MessageSeqs []int64 `json:"messageSeqs,omitempty"`
	Source      Source  `json:"source"`
}
