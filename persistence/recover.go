package persistence

// This file commits crash recovery of an interrupted final turn. What
// closes the turn is the session package's business
// (session.CloseInterruptedTurn); this package only shows those events
// (Inspect) or appends and fsyncs them (Load).

import (
	"errors"

	"github.com/acp-agent/acp-agent/agent/session"
)

// repair returns the closing events of an interrupted final turn of v (nil
// when the log does not end inside a turn). A malformed payload inside the
// open turn is corruption of its line.
func repair(id, path string, v logView) ([]session.Event, error) {
	cl, err := session.CloseInterruptedTurn(id, v.events)
	if err == nil {
		return cl, nil
	}
	line := 0
	var fe *session.FormatError
	if errors.As(err, &fe) {
		line = int(fe.Seq) + 2
	}
	return nil, &CorruptError{ID: id, Path: path, Line: line, Offset: -1, Err: err}
}
