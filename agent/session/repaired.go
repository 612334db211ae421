package session

// This file defines the record a log repair leaves (persistence's
// Repair, `acp-agent sessions repair`): which lines it dropped, so a
// repaired session never passes for an untouched one.

// TypeRepaired is written by a repair of a damaged log. A repair drops
// each undecodable line on its own and keeps every valid event with its
// own seq; each seq left without an event gets a filler of this type (so
// seqs stay contiguous and every reference to a seq keeps its meaning),
// and one summary of this type at the end of the log lists every dropped
// line. It is log-only: no history, no display.
const TypeRepaired = "session/repaired"

// RepairedData is the payload of a session/repaired event.
type RepairedData struct {
	// Dropped lists the lines the repair removed: the summary lists them
	// all, a filler those that stood where its seq is missing (possibly
	// none: the line of that seq was lost entirely).
	Dropped []DroppedLine `json:"dropped"`
	// Filler marks an event that only holds the place of a missing seq.
	Filler bool `json:"filler,omitempty"`
	// Backup is the file that keeps the whole log as it was before the
	// repair (summary only).
	Backup string `json:"backup,omitempty"`
}

// DroppedLine is one line a repair removed.
type DroppedLine struct {
	Line   int    `json:"line"`   // 1-based line of the file before the repair
	Offset int64  `json:"offset"` // its byte offset
	Bytes  int    `json:"bytes"`  // its length, without the newline
	Reason string `json:"reason"` // why it could not be kept
}

// Repaired reports whether events hold a repair's summary: the session's
// log was repaired and lost the lines the summary lists.
func Repaired(events []Event) (RepairedData, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeRepaired {
			continue
		}
		d, err := DecodeData[RepairedData](events[i])
		if err == nil && !d.Filler {
			return d, true
		}
	}
	return RepairedData{}, false
}
