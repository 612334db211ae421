package session

// This file defines the compaction record and how it changes the
// model-visible history. A compaction is one log-only event: the log keeps
// every original message (session/load replays them), while History
// replaces the messages it covers by its summary and shows stubs for old
// tool results. Derived state only: the same log gives the same view.

import (
	"fmt"
	"strings"
)

// TypeCompaction records one compaction attempt (completed, failed or
// cancelled). Only completed ones change the model's view.
const TypeCompaction = "session/compaction"

// Compaction triggers.
const (
	TriggerAuto     = "auto"     // the next request would pass the threshold
	TriggerManual   = "manual"   // the /compact command
	TriggerOverflow = "overflow" // the provider answered context_length_exceeded
)

// Compaction outcomes.
const (
	CompactionCompleted = "completed"
	CompactionFailed    = "failed"
	CompactionCancelled = "cancelled"
)

// CompactionData is the payload of session/compaction.
type CompactionData struct {
	ID      string `json:"id"`
	Trigger string `json:"trigger"`
	Outcome string `json:"outcome"`
	// UpTo, when Summary is set, is the seq of the last surface event the
	// summary replaces: the view is the summary, then the messages of
	// surface events after UpTo.
	UpTo    int64  `json:"upTo"`
	Summary string `json:"summary,omitempty"`
	// StubUpTo, when positive, stubs the bodies of tool results whose
	// event seq is at most StubUpTo (phase one: tool, arguments, size).
	StubUpTo int64 `json:"stubUpTo,omitempty"`
	// PreTokens and PostTokens estimate the context before and after.
	PreTokens  int    `json:"preTokens"`
	PostTokens int    `json:"postTokens"`
	DurationMs int64  `json:"durationMs"`
	Error      string `json:"error,omitempty"`
	// Instructions are the person's /compact instructions, if any.
	Instructions string `json:"instructions,omitempty"`
}

// SourceCompaction marks the summary message of a compaction.
const SourceCompaction = "compaction"

// SummaryPrefix introduces a summary in the model's view.
const SummaryPrefix = "Summary of the earlier conversation (it was compacted to fit the context window):\n\n"

// applyCompaction changes the view out by the completed compaction of ev.
func applyCompaction(out []SurfaceMessage, ev Event) ([]SurfaceMessage, error) {
	d, err := DecodeData[CompactionData](ev)
	if err != nil {
		return nil, err
	}
	if d.Outcome != CompactionCompleted {
		return out, nil
	}
	if d.StubUpTo > 0 {
		out = StubResults(out, d.StubUpTo)
	}
	if d.Summary == "" {
		return out, nil
	}
	kept := make([]SurfaceMessage, 0, len(out)+1)
	kept = append(kept, SurfaceMessage{Seq: ev.Seq, Message: Message{
		ID: d.ID, Role: RoleUser, Content: []Block{Text(SummaryPrefix + d.Summary)},
		Source: Source{Kind: SourceCompaction},
	}})
	for _, m := range out {
		if m.Seq > d.UpTo {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// StubResults replaces the bodies of tool results up to seq upTo by a
// stub naming the tool, its arguments and the body's size. It copies the
// messages it changes.
func StubResults(out []SurfaceMessage, upTo int64) []SurfaceMessage {
	calls := map[string]Block{}
	res := make([]SurfaceMessage, len(out))
	for i, m := range out {
		res[i] = m
		for _, b := range m.Message.Content {
			if b.Type == BlockToolCall {
				calls[b.ID] = b
			}
		}
		if m.Seq > upTo || m.Message.Source.Kind != SourceTool {
			continue
		}
		content := make([]Block, len(m.Message.Content))
		for j, b := range m.Message.Content {
			content[j] = b
			if b.Type == BlockToolResult {
				content[j].Content = []Block{Text(Stub(calls[b.ToolCallID], b.Content))}
			}
		}
		res[i].Message.Content = content
	}
	return res
}

// Stub is the short text that replaces an old tool result's body.
func Stub(call Block, body []Block) string {
	size := 0
	for _, b := range body {
		size += len(b.Text)
	}
	args := call.Arguments
	if len(args) > 200 {
		args = args[:200] + "…"
	}
	name := call.Name
	if name == "" {
		name = "tool"
	}
	if strings.HasPrefix(JoinText(body, ""), "[result of ") {
		return JoinText(body, "") // already a stub
	}
	return fmt.Sprintf("[result of %s(%s) omitted to save context: %d bytes]", name, args, size)
}
