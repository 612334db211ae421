package session

import (
	"bytes"
	"encoding/json"
)

// SurfaceMessage is one model-visible message and the seq of the surface
// event that produced it.
type SurfaceMessage struct {
	Seq     int64
	Message Message
	// Interrupted: an assistant reply that broke off (cancelled, or its
	// model call failed) before it was complete.
	Interrupted bool
	// Unanswered: the last message of a turn that ended without a reply
	// to it (the turn failed, was cancelled or blocked).
	Unanswered bool
}

// History derives the model-visible conversation from the surface events
// of a log: append ops add a message; a replace op {start, end} removes the
// messages produced by events start..end and puts its own message where the
// first of them stood; a completed session/compaction event replaces the
// messages it covers by its summary (compaction.go); an assistant reply
// recorded as retried (AssistantMessageData.Retried) adds nothing; a turn
// that did not complete marks its last message Unanswered. Log events are never
// deleted, so the
// same log always yields the same history.
func History(events []Event) ([]SurfaceMessage, error) {
	return Extend(nil, events)
}

// Extend folds further events into a history derived from the events
// before them: History(a ++ b) == Extend(History(a), b). The returned slice
// may share out's storage.
func Extend(out []SurfaceMessage, events []Event) ([]SurfaceMessage, error) {
	for _, ev := range events {
		if ev.Type == TypeCompaction {
			var err error
			if out, err = applyCompaction(out, ev); err != nil {
				return nil, err
			}
			continue
		}
		if ev.Type == TypeTurnEnd {
			markUnanswered(out, ev)
			continue
		}
		if !SurfaceTypes[ev.Type] || ev.SurfaceOp == nil {
			continue
		}
		msg, err := SurfaceMessageOf(ev)
		if err != nil {
			return nil, err
		}
		sm := SurfaceMessage{Seq: ev.Seq, Message: msg}
		if ev.Type == TypeAssistantMessage {
			var retried bool
			if sm.Interrupted, retried = interrupted(ev); retried {
				continue // its request was sent again without it
			}
		}
		if !ev.SurfaceOp.Replace {
			out = append(out, sm)
			continue
		}
		kept := out[:0:0]
		inserted := false
		for _, m := range out {
			if m.Seq >= ev.SurfaceOp.Start && m.Seq <= ev.SurfaceOp.End {
				if !inserted {
					kept = append(kept, sm)
					inserted = true
				}
				continue
			}
			kept = append(kept, m)
		}
		if !inserted {
			kept = append(kept, sm)
		}
		out = kept
	}
	return out, nil
}

// SurfaceMessageOf returns the message carried by a surface event.
func SurfaceMessageOf(ev Event) (Message, error) {
	switch ev.Type {
	case TypeUserMessage:
		return DecodeData[Message](ev)
	case TypeAssistantMessage:
		d, err := DecodeData[AssistantMessageData](ev)
		return d.Message, err
	case TypeToolResult:
		d, err := DecodeData[ToolResultData](ev)
		return d.Message, err
	}
	return Message{}, &FormatError{Seq: ev.Seq, Type: ev.Type, Message: "is not a surface event"}
}

// markUnanswered marks the last message of out unanswered when the turn
// ended by ev did not complete and that message is the person's or a tool
// result (the model never answered it).
func markUnanswered(out []SurfaceMessage, ev Event) {
	n := len(out)
	if n == 0 || out[n-1].Message.Role != RoleUser || out[n-1].Message.Source.Kind == SourceCompaction {
		return
	}
	d, err := DecodeData[TurnEndData](ev)
	if err != nil || d.Reason.Kind == TurnEndCompleted {
		return
	}
	out[n-1].Unanswered = true
}

// interrupted reports whether an assistant/message event records an
// interrupted reply, and whether that reply's request was sent again
// without it (AssistantMessageData.Retried: it is not in the view),
// without decoding its content.
func interrupted(ev Event) (interrupted, retried bool) {
	if !bytes.Contains(ev.Data, []byte(`"interrupted":true`)) {
		return false, false
	}
	var d struct {
		Interrupted bool `json:"interrupted"`
		Retried     bool `json:"retried"`
	}
	if json.Unmarshal(ev.Data, &d) != nil {
		return false, false
	}
	return d.Interrupted, d.Retried
}
