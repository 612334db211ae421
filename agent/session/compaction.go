package session

// This file defines the compaction record and how it changes the
// model-visible history. A compaction is one log-only event: the log keeps
// every original message (session/load replays them), while History
// replaces the messages it covers by its summary and shows stubs for old
// tool results. Derived state only: the same log gives the same view.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TypeCompaction records one compaction attempt (completed, failed or
// cancelled). Only completed ones change the model's view.
const TypeCompaction = "session/compaction"

// TypeCompactionStart records that a compaction began, before anything
// shows it: a crash before its session/compaction leaves the start open,
// and the repair closes it as failed (InterruptedCompaction), so every
// compaction a client saw replays, closed. It never changes the view.
const TypeCompactionStart = "session/compaction_start"

// CompactionStartData is the payload of session/compaction_start; its ID
// is the one the closing session/compaction carries.
type CompactionStartData struct {
	ID           string `json:"id"`
	Trigger      string `json:"trigger"`
	PreTokens    int    `json:"preTokens"`
	Instructions string `json:"instructions,omitempty"`
}

// TextCompactionInterrupted is the error of a compaction closed by repair.
const TextCompactionInterrupted = "the compaction was interrupted (the process ended before it finished); the conversation was left as it was"

// InterruptedCompaction is the failed session/compaction that closes the
// started compaction d after an interruption: the view stays as it was.
func InterruptedCompaction(d CompactionStartData) CompactionData {
	return CompactionData{
		ID: d.ID, Trigger: d.Trigger, Outcome: CompactionFailed,
		PreTokens: d.PreTokens, PostTokens: d.PreTokens,
		Error: TextCompactionInterrupted, Instructions: d.Instructions,
	}
}

// OpenCompactions returns the compactions started in events and not
// closed by a session/compaction of the same id, in order of start. A
// malformed payload is reported as the *FormatError of DecodeData.
func OpenCompactions(events []Event) ([]CompactionStartData, error) {
	var open []CompactionStartData
	for _, ev := range events {
		switch ev.Type {
		case TypeCompactionStart:
			d, err := DecodeData[CompactionStartData](ev)
			if err != nil {
				return nil, err
			}
			open = append(open, d)
		case TypeCompaction:
			d, err := DecodeData[CompactionData](ev)
			if err != nil {
				return nil, err
			}
			for i := range open {
				if open[i].ID == d.ID {
					open = append(open[:i], open[i+1:]...)
					break
				}
			}
		}
	}
	return open, nil
}

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
	// UpTo, when Summary is set, names the last message of the view the
	// summary replaces by its seq: the view is the summary, then the
	// messages after that one in view order (see cutIndex).
	UpTo    int64  `json:"upTo"`
	Summary string `json:"summary,omitempty"`
	// StubUpTo, when positive, names the last message of the view whose
	// tool results are stubbed (phase one: tool, arguments, size), in view
	// order like UpTo.
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
	cut := cutIndex(out, d.UpTo)
	kept := make([]SurfaceMessage, 0, len(out)-cut+1)
	// The summary stands where the last message it replaces stood, with
	// that message's seq, so a later cut naming it (a summary of this
	// summary) covers the summary alone and keeps what follows it.
	kept = append(kept, SurfaceMessage{Seq: d.UpTo, Message: Message{
		ID: d.ID, Role: RoleUser, Content: []Block{Text(SummaryPrefix + d.Summary)},
		Source: Source{Kind: SourceCompaction},
	}})
	kept = append(kept, out[cut:]...)
	return kept, nil
}

// cutIndex returns the index of the first message of out after the one
// named by seq upTo: cut points are positions in the view, not seq
// comparisons, because a view is not in seq order (a summary, a replace
// op's message stand before messages older than their events). A seq no
// message of out carries (a log written before cut points were
// positional) falls back to the first message whose seq passes upTo,
// counted from the end, so only a prefix is ever cut.
func cutIndex(out []SurfaceMessage, upTo int64) int {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Seq == upTo {
			return i + 1
		}
	}
	cut := len(out)
	for i := len(out) - 1; i >= 0 && out[i].Seq > upTo; i-- {
		cut = i
	}
	return cut
}

// StubResults replaces the bodies of the tool results of out up to the
// message named by seq upTo (in view order, see cutIndex) by a stub naming
// the tool, its arguments and the body's size. It copies the messages it
// changes.
func StubResults(out []SurfaceMessage, upTo int64) []SurfaceMessage {
	calls := map[string]Block{}
	res := make([]SurfaceMessage, len(out))
	cut := cutIndex(out, upTo)
	for i, m := range out {
		res[i] = m
		for _, b := range m.Message.Content {
			if b.Type == BlockToolCall {
				calls[b.ID] = b
			}
		}
		if i >= cut || m.Message.Source.Kind != SourceTool {
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
		// Cut on a rune boundary: the stub must stay valid UTF-8.
		n := 200
		for n > 0 && !utf8.RuneStart(args[n]) {
			n--
		}
		args = args[:n] + "…"
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
