package session

// SurfaceMessage is one model-visible message and the seq of the surface
// event that produced it.
type SurfaceMessage struct {
	Seq     int64
	Message Message
}

// History derives the model-visible conversation from the surface events
// of a log: append ops add a message; a replace op {start, end} removes the
// messages produced by events start..end and puts its own message where the
// first of them stood; a completed session/compaction event replaces the
// messages it covers by its summary (compaction.go). Log events are never
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
		if !SurfaceTypes[ev.Type] || ev.SurfaceOp == nil {
			continue
		}
		msg, err := SurfaceMessageOf(ev)
		if err != nil {
			return nil, err
		}
		sm := SurfaceMessage{Seq: ev.Seq, Message: msg}
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
