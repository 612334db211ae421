package persistence

// This file defines the package's sentinel and typed errors.

import (
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Sentinel errors. Callers match them with errors.Is; they are always
// wrapped with the session id (and path where useful).
var (
	// ErrNotFound: no stored log exists for the session id.
	ErrNotFound = errors.New("persistence: session not found")
	// ErrExists: creating a session whose log already exists.
	// It wraps session.ErrExists so the live store can mint another id.
	ErrExists = fmt.Errorf("persistence: %w", session.ErrExists)
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("persistence: store closed")
	// ErrNotOpen: an operation that needs the write lock on a session this
	// Store does not hold (see Load and Open).
	ErrNotOpen = errors.New("persistence: session not open for writing")
	// ErrConflict: events handed to Open(restored=true) disagree with the
	// stored log (a stale view, or the header differs).
	ErrConflict = errors.New("persistence: events do not match the stored log")
	// ErrCorrupt is matched (errors.Is) by every *CorruptError.
	ErrCorrupt = errors.New("persistence: corrupt session log")
)

// LockedError reports that another Store, in this process or another one,
// holds the single-writer lock of the session.
type LockedError struct {
	ID   string // session id
	Path string // the locked session file
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("persistence: session %s is open for writing elsewhere (another store or process holds the lock on %s)", e.ID, e.Path)
}

// CorruptError reports a stored log that cannot be read: anything wrong
// with it other than a torn final line (see doc.go). Line is 1-based (the
// header is line 1, the event with seq n is line n+2); Offset is the byte
// offset where that line starts. Err is the cause: a *session.HeaderError,
// a *session.FormatError, a *session.UnsupportedTypeError, a JSON syntax
// error, or a plain description.
type CorruptError struct {
	ID     string
	Path   string
	Line   int
	Offset int64
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("persistence: session %s: corrupt log %s at line %d (byte %d): %v", e.ID, e.Path, e.Line, e.Offset, e.Err)
}

// Unwrap returns the cause, so errors.As finds *session.UnsupportedTypeError
// and friends through a CorruptError.
func (e *CorruptError) Unwrap() error { return e.Err }

// CodeCorrupt is the stable error code of a corrupt session log.
const CodeCorrupt = "SESSION_CORRUPT"

// ErrorCode gives corrupt data its own code (not INTERNAL) wherever
// errors are mapped by code (the ACP error mapping, the command line).
func (e *CorruptError) ErrorCode() string { return CodeCorrupt }

// Is makes every CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// SeqError reports an append whose first event does not continue the
// stored log.
type SeqError struct {
	ID   string
	Want int64 // the stored next seq
	Got  int64 // the seq offered
}

func (e *SeqError) Error() string {
	return fmt.Sprintf("persistence: session %s: append starts at seq %d, but the stored next seq is %d", e.ID, e.Got, e.Want)
}

// CodeWrite is the stable error code of a failed write of a session log
// (the agent records it in the turn's end as SESSION_WRITE_FAILED too).
const CodeWrite = "SESSION_WRITE_FAILED"

// WriteError reports that events of a session could not be written or
// made durable (a full disk, an I/O error). It is sticky: once a session
// has one, every later write and wait on it fails with it, so nothing is
// shown that its log does not hold. Op is the step that failed ("write",
// "fsync", "close"); Unsaved counts the events appended but not written
// when it was last reported (release, shutdown).
type WriteError struct {
	ID      string
	Path    string
	Op      string
	Unsaved int
	Err     error
}

func (e *WriteError) Error() string {
	msg := fmt.Sprintf("persistence: session %s: cannot %s its log %s: %v", e.ID, e.Op, e.Path, e.Err)
	if e.Unsaved > 0 {
		msg += fmt.Sprintf(" (%d events not saved)", e.Unsaved)
	}
	return msg
}

func (e *WriteError) Unwrap() error { return e.Err }

// ErrorCode and Code give the failure its stable code wherever errors are
// mapped by code (ACP, the command line, the agent's turn end).
func (e *WriteError) ErrorCode() string { return CodeWrite }

// Code is ErrorCode under the name the agent's turn-end mapping reads.
func (e *WriteError) Code() string { return CodeWrite }
