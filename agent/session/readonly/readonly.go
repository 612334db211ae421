package readonly

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
)

// The contract's codes of a refused change (JSON-RPC -32602 on the wire).
const (
	// CodeReadOnly refuses a change to a subagent session opened for
	// viewing.
	CodeReadOnly = "READ_ONLY_SESSION"
	// CodeDamaged refuses a change to (or a resume of) a session whose log
	// is damaged: only its valid part can be viewed until it is repaired.
	CodeDamaged = "SESSION_DAMAGED"
	// CodeCorrupt is the code storage gives a log with a bad line in the
	// middle (the read that fails before ValidPart is tried).
	CodeCorrupt = "SESSION_CORRUPT"
)

// Refusal is a refused change: a contract code and the message the client
// shows.
type Refusal struct {
	Code, Message string
}

// Reason is why session ID is open read-only: Damage (as the store words
// it) when its log is damaged, else it is a subagent session.
type Reason struct {
	ID, Damage string
}

// Refuse is the refusal of a request that would change the session:
// for a damaged log CodeDamaged, saying what is damaged and how to repair
// it (damagedWhat says what cannot be done: "prompted", "switched to
// another mode", ...); for a subagent session CodeReadOnly with why
// (subagentWhy: "it can be loaded for viewing but not prompted", ...).
func (r Reason) Refuse(damagedWhat, subagentWhy string) Refusal {
	if r.Damage != "" {
		return Damaged(r.ID, r.Damage, damagedWhat)
	}
	return Refusal{Code: CodeReadOnly, Message: fmt.Sprintf("session %s is a subagent session: %s", r.ID, subagentWhy)}
}

// Damaged refuses to change (or resume) session id, whose log is damaged
// (damage, as the store words it): only its valid part can be viewed
// until it is repaired.
func Damaged(id, damage, what string) Refusal {
	return Refusal{Code: CodeDamaged, Message: fmt.Sprintf(
		"session %s cannot be %s: its log is damaged (%s), so it is open read-only; "+
			"repair it with `acp-agent sessions repair %s` (a backup is kept), then load it again", id, what, damage, id)}
}

// DamagedNotice follows a damaged session's replay: what is damaged, that
// only the valid part is shown, read-only, and how to repair it. child
// says it is a subagent session.
func DamagedNotice(id, damage string, child bool) string {
	what := "This session's"
	if child {
		what = "This subagent session's"
	}
	return fmt.Sprintf("%s log is damaged (%s), so only the part before the damage is shown, read-only. "+
		"Run `acp-agent sessions repair %s` to repair it (a backup is kept).\n\n", what, damage, id)
}

// NotWholeNotice follows the replay of a session whose log a repair left
// lines short of; described says what is missing. "" when nothing is.
func NotWholeNotice(described string) string {
	if described == "" {
		return ""
	}
	return "This session's history is not whole: " + described + ".\n\n"
}

// ValidPartReader reads the valid part of a damaged stored log: the part
// before its first bad line, and what is damaged ("" when the log reads
// fine).
type ValidPartReader interface {
	InspectValid(ctx context.Context, id string) (h session.Header, events []session.Event, damage string, err error)
}

// ValidPart reads the valid part of stored session id when readErr, the
// failure to read its log, is a damaged log (CodeCorrupt) and vr can read
// that part; ok is false otherwise (vr nil, another failure, or no damage
// found), and the session cannot be opened at all.
func ValidPart(ctx context.Context, vr ValidPartReader, id string, readErr error) (h session.Header, events []session.Event, damage string, ok bool) {
	var coded interface{ ErrorCode() string }
	if vr == nil || !errors.As(readErr, &coded) || coded.ErrorCode() != CodeCorrupt {
		return h, nil, "", false
	}
	h, events, damage, err := vr.InspectValid(ctx, id)
	if err != nil || damage == "" {
		return h, nil, "", false
	}
	return h, events, damage, true
}
