package subagenttest

import "github.com/acp-agent/acp-agent/agent/session"

// IndexOf returns the index of the first event of type typ, or -1.
func IndexOf(events []session.Event, typ string) int {
	for i, ev := range events {
		if ev.Type == typ {
			return i
		}
	}
	return -1
}

// Count returns how many events have type typ.
func Count(events []session.Event, typ string) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}
