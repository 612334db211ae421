package persistence

// This file defines crash recovery of an interrupted final turn: the
// synthetic closers that Inspect shows in memory and Load makes durable.
// See shared/spec/subagent-contract.md §7 (Appendix A).

import (
	"github.com/acp-agent/acp-agent/agent/session"
)

// Tool-result error codes of the synthetic closers.
const (
	// CodeToolOutcomeUnknown: a tool/call was recorded but no tool/result.
	CodeToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
	// CodeToolNotStarted: the model asked for a call (a tool-call block of
	// an assistant/message) but no tool/call was recorded.
	CodeToolNotStarted = "TOOL_NOT_STARTED"
)

// Texts the model sees in the synthetic error tool results.
const (
	textOutcomeUnknown = "Error: tool call outcome unknown after an interruption"
	textNotStarted     = "Error: tool call was not started before an interruption"
)

// pendingCall is a tool call of the open turn, in order of first mention.
type pendingCall struct {
	id      string
	step    int
	source  int64 // seq of the tool/call, else of the assistant/message
	started bool  // a tool/call event exists
}

// closers returns the events that close an interrupted final turn of
// events (nil when the log does not end inside a turn): one error
// tool/result per unanswered call, step/end if a step is open, then
// turn/end {kind:"interrupted"}. They continue seq, reuse the last event's
// time, and their message ids derive from (session id, seq) so Inspect and
// Load produce identical closers. A malformed payload inside the open turn
// is reported as the *session.FormatError of DecodeData, with its seq.
func closers(id string, events []session.Event) ([]session.Event, error) {
	if !session.OpenTurn(events) {
		return nil, nil
	}
	start := len(events) - 1
	for events[start].Type != session.TypeTurnStart {
		start--
	}
	td, err := session.DecodeData[session.TurnData](events[start])
	if err != nil {
		return nil, err
	}
	var (
		calls    []*pendingCall
		byID     = map[string]*pendingCall{}
		answered = map[string]bool{}
		openStep *session.StepData
	)
	mention := func(callID string, step int, seq int64, started bool) {
		if callID == "" {
			return
		}
		c := byID[callID]
		if c == nil {
			c = &pendingCall{id: callID, step: step, source: seq}
			byID[callID] = c
			calls = append(calls, c)
		}
		if started && !c.started {
			c.started, c.step, c.source = true, step, seq
		}
	}
	for _, ev := range events[start+1:] {
		switch ev.Type {
		case session.TypeStepStart:
			d, err := session.DecodeData[session.StepData](ev)
			if err != nil {
				return nil, err
			}
			openStep = &d
		case session.TypeStepEnd:
			openStep = nil
		case session.TypeAssistantMessage:
			d, err := session.DecodeData[session.AssistantMessageData](ev)
			if err != nil {
				return nil, err
			}
			for _, b := range d.Message.Content {
				if b.Type == session.BlockToolCall {
					mention(b.ID, d.Step, ev.Seq, false)
				}
			}
		case session.TypeToolCall:
			d, err := session.DecodeData[session.ToolCallData](ev)
			if err != nil {
				return nil, err
			}
			mention(d.CallID, d.Step, ev.Seq, true)
		case session.TypeToolResult:
			d, err := session.DecodeData[session.ToolResultData](ev)
			if err != nil {
				return nil, err
			}
			if d.Message.Source.CallID != "" {
				answered[d.Message.Source.CallID] = true
			}
			for _, b := range d.Message.Content {
				if b.Type == session.BlockToolResult {
					answered[b.ToolCallID] = true
				}
			}
		}
	}

	last := events[len(events)-1]
	seq := int64(len(events))
	var out []session.Event
	add := func(typ string, data any, opts func(*session.Event)) {
		ev := session.Event{Type: typ, Seq: seq, Time: last.Time, Data: session.MustData(data)}
		if opts != nil {
			opts(&ev)
		}
		out = append(out, ev)
		seq++
	}
	for _, c := range calls {
		if answered[c.id] {
			continue
		}
		code, text := CodeToolOutcomeUnknown, textOutcomeUnknown
		if !c.started {
			code, text = CodeToolNotStarted, textNotStarted
		}
		msg := session.Message{
			ID:   session.HashID(id+"/recovery", seq),
			Role: session.RoleUser,
			Content: []session.Block{{
				Type:       session.BlockToolResult,
				ToolCallID: c.id,
				Content:    []session.Block{session.Text(text)},
				IsError:    true,
			}},
			Source: session.Source{Kind: session.SourceTool, CallID: c.id},
		}
		source := c.source
		add(session.TypeToolResult, session.ToolResultData{
			Turn:    td.Turn,
			Step:    c.step,
			Message: msg,
			Error:   &session.ErrorInfo{Message: text, Code: code},
		}, func(ev *session.Event) {
			ev.SurfaceOp = session.AppendOp
			ev.SourceEventSeqs = []int64{source}
		})
	}
	if openStep != nil {
		add(session.TypeStepEnd, session.StepData{Turn: openStep.Turn, Step: openStep.Step}, nil)
	}
	add(session.TypeTurnEnd, session.TurnEndData{
		Turn:   td.Turn,
		Reason: session.TurnEndReason{Kind: session.TurnEndInterrupted},
	}, nil)
	return out, nil
}
