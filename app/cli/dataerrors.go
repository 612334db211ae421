package cli

// This file defines what the read-only data commands (sessions, sessions
// show, agents) say when data is missing or damaged: typed errors with
// stable codes, reasons without package prefixes, and a data directory
// that is never created just to be read.

import (
	"errors"
	"fmt"
	"github.com/acp-agent/acp-agent/app"
	"io/fs"
	"os"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
)

// Codes of DataError.
const (
	CodeSessionNotFound = "SESSION_NOT_FOUND"
	CodeSessionCorrupt  = persistence.CodeCorrupt
	CodeSessionUnusable = "SESSION_UNREADABLE"
)

// DataError is a data command's failure on one session (exit code 1).
type DataError struct {
	Code    string
	Message string
	Err     error
}

func (e *DataError) Error() string     { return e.Message }
func (e *DataError) Unwrap() error     { return e.Err }
func (e *DataError) ErrorCode() string { return e.Code }

func sessionNotFound(id string, err error) error {
	return &DataError{Code: CodeSessionNotFound, Message: "session not found: " + id + " (list the stored sessions with 'acp-agent sessions', or pass --data-dir)", Err: err}
}

// sessionError turns a storage error about session id into what a person
// reads: "session not found", or the session's id with the reason.
func sessionError(id string, err error) error {
	var ce *persistence.CorruptError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, persistence.ErrNotFound):
		return sessionNotFound(id, err)
	case errors.As(err, &ce):
		return &DataError{Code: CodeSessionCorrupt, Message: fmt.Sprintf("session %s: %s", id, app.Reason(err)) + advice(err), Err: err}
	case errors.Is(err, persistence.ErrUnreadable):
		return &DataError{Code: CodeSessionUnusable, Message: fmt.Sprintf("session %s: %s", id, app.Reason(err)) + advice(err), Err: err}
	}
	return fmt.Errorf("session %s: %s: %w", id, app.Reason(err), err)
}

// advice is "; " and what to do about a damaged log (Damage.Advice), or
// "" when err is not damage or nothing is to be done.
func advice(err error) string {
	if d, ok := persistence.DamageOf(err); ok && d.Advice() != "" {
		return "; " + d.Advice()
	}
	return ""
}

// errNoDataDir: the data directory does not exist (read-only commands
// report it as empty and do not create it).
var errNoDataDir = errors.New("no data directory")

// openReadStore opens the store for a read-only command. A data directory
// that does not exist is errNoDataDir: reading never creates it.
func openReadStore(env *Env) (*persistence.Store, error) {
	dir, err := env.Flags.dataDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoDataDir
	} else if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	return persistence.Open(dir, persistence.Options{Logger: env.Logger})
}

// openOneSession checks that args is one valid session id and opens the
// store read-only for command cmd; the caller closes the store. A data
// directory that does not exist makes the id not found.
func openOneSession(env *Env, cmd string, args []string) (string, *persistence.Store, error) {
	if len(args) != 1 {
		return "", nil, usageErrorf("%s: want exactly one session ID, got %d arguments", cmd, len(args))
	}
	id := args[0]
	if err := session.ValidateID(id); err != nil {
		return "", nil, usageErrorf("%s: %s", cmd, badID(id))
	}
	st, err := openReadStore(env)
	if errors.Is(err, errNoDataDir) {
		return "", nil, sessionNotFound(id, err)
	}
	if err != nil {
		return "", nil, err
	}
	return id, st, nil
}
