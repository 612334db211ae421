package persistence

// This file defines the one wording of a damaged session log. Every
// command and notice that reports damage (sessions, sessions show and
// repair, agents and list_agents rows, session/list, the session/load
// notice) words it through Damage.Text, so the same damage reads the same
// everywhere.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// DamageKind says what is wrong with a stored session log.
type DamageKind string

// Kinds of damage.
const (
	// DamageTornTail: the final line was cut short (a crash mid-write).
	// It is not part of the log; the next Load drops it, keeping a backup.
	DamageTornTail DamageKind = "torn-tail"
	// DamageBadLine: a line before the last is not a valid event (cut,
	// overwritten, not JSON, not an event envelope).
	DamageBadLine DamageKind = "bad-line"
	// DamageSeqGap: a line's seq does not follow the line before it:
	// events are missing, or its seq repeats or goes back (or its seq
	// field is damaged).
	DamageSeqGap DamageKind = "seq-gap"
	// DamageBadHeader: the header line cannot be read or names another
	// session (a header mismatch). Repair cannot fix it.
	DamageBadHeader DamageKind = "bad-header"
	// DamageUnreadable: the file is no session log at all (a FIFO, a
	// directory, an empty file, one that cannot be opened).
	DamageUnreadable DamageKind = "unreadable"
	// DamageRepaired: a repair dropped lines; the log is valid again but
	// lost what those lines held.
	DamageRepaired DamageKind = "repaired"
)

// Damage is one damage of the log of session ID at Path. Line is the
// 1-based line it concerns (0 for none); Detail is the cause (a JSON
// error, the header problem, the unreadable file's problem). For
// DamageSeqGap the line holds seq Got where seq Want was expected; for
// DamageRepaired, Repaired is the repair's summary.
type Damage struct {
	Kind      DamageKind
	ID, Path  string
	Line      int
	Detail    string
	Got, Want int64
	Repaired  session.RepairedData
}

// DamageOf classifies a storage error about a session's log: a
// *CorruptError (bad line, seq gap, bad header) or an *UnreadableError
// (bad header, unreadable file). ok is false for any other error.
func DamageOf(err error) (d Damage, ok bool) {
	var (
		ce *CorruptError
		ue *UnreadableError
		he *session.HeaderError
		fe *session.FormatError
	)
	switch {
	case errors.As(err, &ce):
		d = Damage{ID: ce.ID, Path: ce.Path, Line: ce.Line, Detail: trimPrefix(ce.Err)}
		switch {
		case ce.Line <= 1:
			d.Kind, d.Line = DamageBadHeader, 1
			if errors.As(ce.Err, &he) {
				d.Detail = he.Message
			}
		case errors.As(ce.Err, &fe) && fe.Gap:
			d.Kind, d.Got, d.Want = DamageSeqGap, fe.Got, fe.Seq
		default:
			d.Kind = DamageBadLine
		}
		return d, true
	case errors.As(err, &ue):
		d = Damage{Kind: DamageUnreadable, ID: ue.ID, Path: ue.Path, Detail: ue.Problem}
		if errors.As(ue.Err, &he) {
			d.Kind, d.Line, d.Detail = DamageBadHeader, 1, he.Message
		}
		return d, true
	}
	return Damage{}, false
}

// TornDamage is the damage of a log whose final line (line) is torn.
func TornDamage(id, path string, line int) Damage {
	return Damage{Kind: DamageTornTail, ID: id, Path: path, Line: line}
}

// RepairedDamage is the mark a repair left on a log (its summary, see
// session.Repaired).
func RepairedDamage(id, path string, sum session.RepairedData) Damage {
	return Damage{Kind: DamageRepaired, ID: id, Path: path, Repaired: sum}
}

// Text is the one wording of d, for people: what is wrong and where (the
// line and the file of a damaged event line; a bad header or unreadable
// file by its problem alone, the row or message naming the session), never
// a package prefix. Callers add the session and
// what to do (Advice).
func (d Damage) Text() string {
	switch d.Kind {
	case DamageTornTail:
		return fmt.Sprintf("torn last line %d of %s: a write cut short by a crash; the next load drops it, keeping a backup", d.Line, d.Path)
	case DamageBadLine:
		return fmt.Sprintf("corrupt at line %d of %s: %s", d.Line, d.Path, d.Detail)
	case DamageSeqGap:
		what := "events missing"
		if d.Got < d.Want {
			what = "seq out of order"
		}
		return fmt.Sprintf("%s at line %d of %s: it holds seq %d where seq %d was expected", what, d.Line, d.Path, d.Got, d.Want)
	case DamageBadHeader:
		return "bad header: " + d.Detail
	case DamageUnreadable:
		// The problem is the file's own (what it is instead of a log);
		// the listing row or message names the session.
		return d.Detail
	case DamageRepaired:
		lines := make([]string, len(d.Repaired.Dropped))
		for i, l := range d.Repaired.Dropped {
			lines[i] = strconv.Itoa(l.Line)
		}
		what := "no line"
		switch len(lines) {
		case 0:
		case 1:
			what = "line " + lines[0]
		default:
			what = "lines " + strings.Join(lines, ", ")
		}
		text := fmt.Sprintf("repaired: %s of %s dropped", what, d.Path)
		if d.Repaired.Backup != "" {
			text += fmt.Sprintf(" (the original is kept in %s)", filepath.Join(filepath.Dir(d.Path), filepath.Base(d.Repaired.Backup)))
		}
		return text
	}
	return fmt.Sprintf("damaged log %s: %s", d.Path, d.Detail)
}

// Repairable reports whether `acp-agent sessions repair` fixes d: a bad
// line or a seq gap. A torn tail is cut by the next load, a repaired log
// is valid, and a bad header or unreadable file cannot be repaired.
func (d Damage) Repairable() bool {
	return d.Kind == DamageBadLine || d.Kind == DamageSeqGap
}

// Advice says what to do about d ("" when nothing is to be done by
// hand): the repair command for a repairable damage, else why not.
func (d Damage) Advice() string {
	switch {
	case d.Repairable():
		return fmt.Sprintf("'acp-agent sessions repair %s' repairs it, keeping a backup", d.ID)
	case d.Kind == DamageBadHeader || d.Kind == DamageUnreadable:
		return "it cannot be repaired: move the file out of the sessions directory to drop the session"
	}
	return ""
}

// trimPrefix is err's message without this package's prefix.
func trimPrefix(err error) string {
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(err.Error(), "persistence: ", "")
}

// UnreadableDamage is the damage of a listing's Unreadable row.
func UnreadableDamage(u Unreadable) Damage {
	if d, ok := DamageOf(u.Err); ok && d.ID == u.ID {
		return d
	}
	return Damage{Kind: DamageUnreadable, ID: u.ID, Path: u.Path, Detail: u.Problem}
}
