package subagent

// This file is the subagentExternal projection unit: what the listings
// show of a child that is another ACP agent (driver/external), read from
// its own log like its identity and usage: the cause its last turn failed
// with, why a cold resume cannot take its session up again, and the
// children the agent announced (subagent_update), which the catalog lists
// as nested rows under it.

import (
	"encoding/json"
	"slices"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Key and state version of the external unit.
const (
	KeyExternal     = "subagentExternal"
	ExternalVersion = 1
)

// The log records of an external child this unit reads. They are
// driver/external's TypeExternal and TypeNestedChild (subagent must not
// import the driver; app tests check the names agree).
const (
	TypeExternalSession = "subagent/external"
	TypeExternalNested  = "subagent/external-child"
)

// CannotResumeText is the reason a listing gives for an external child
// whose agent supports neither session/resume nor session/load (or whose
// definition declined both).
const CannotResumeText = "cannot resume: the agent does not support session/load"

// ModeNested is the mode of a catalog row for a child an external child's
// agent announced: it has no session of ours, so it is listed, never
// messaged or resumed.
const ModeNested Mode = "nested"

// NestedChild is a child an external agent announced.
type NestedChild struct {
	SessionID   string `json:"sessionId"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// State is running, idle, requires_action or unknown ("": not said);
	// StopReason the idle state's.
	State      string `json:"state,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
}

// External is the unit's value: what the listings say of an external
// child.
type External struct {
	// Failure is the cause its last turn failed with ("" when it did not).
	Failure string `json:"failure,omitempty"`
	// CannotResume says why a cold resume would fail ("" when it can).
	CannotResume string        `json:"cannotResume,omitempty"`
	Nested       []NestedChild `json:"nested,omitempty"`
}

// externalState is the unit's fold state.
type externalState struct {
	external         bool
	recorded         bool // an external session record was seen
	load, resume     bool // what the recorded agent announced
	prefLoad, prefRe *bool
	failure          string
	nested           []NestedChild
}

// ExternalUnit returns the subagentExternal unit. A record that does not
// decode is skipped.
func ExternalUnit() projection.Unit {
	return projection.Fold[externalState]{
		Name:    KeyExternal,
		Version: ExternalVersion,
		Step: func(s externalState, ev session.Event) (externalState, error) {
			switch ev.Type {
			case TypeDefinition:
				var d AgentDefinition
				if json.Unmarshal(ev.Data, &d) == nil && d.External != nil {
					s.external, s.prefLoad, s.prefRe = true, d.External.LoadSession, d.External.Resume
				}
			case TypeExternalSession:
				var r struct {
					SessionID   string `json:"sessionId"`
					LoadSession bool   `json:"loadSession"`
					Resume      bool   `json:"resume"`
				}
				if json.Unmarshal(ev.Data, &r) == nil && r.SessionID != "" {
					s.external, s.recorded, s.load, s.resume = true, true, r.LoadSession, r.Resume
				}
			case TypeExternalNested:
				var n NestedChild
				if json.Unmarshal(ev.Data, &n) != nil || n.SessionID == "" {
					return s, nil
				}
				// States may be shared with earlier snapshots: copy on write.
				s.nested = mergeNested(slices.Clone(s.nested), n)
			case session.TypeTurnEnd:
				d, err := session.DecodeData[session.TurnEndData](ev)
				if err != nil {
					return s, nil
				}
				s.failure = ""
				if d.Reason.Kind == session.TurnEndError && d.Reason.Error != nil {
					s.failure = d.Reason.Error.Message
					if s.failure == "" {
						s.failure = d.Reason.Error.Code
					}
				}
			}
			return s, nil
		},
		Render: func(s externalState) (any, error) {
			if !s.external {
				return nil, nil
			}
			x := External{Failure: s.failure, Nested: s.nested}
			allowed := func(p *bool) bool { return p == nil || *p }
			if s.recorded && !(s.resume && allowed(s.prefRe)) && !(s.load && allowed(s.prefLoad)) {
				x.CannotResume = CannotResumeText
			}
			return x, nil
		},
	}
}

// Note says what a listing row shows of x: the failure's cause and why
// it cannot be resumed, "" when neither applies (or x is nil).
func (x *External) Note() string {
	if x == nil {
		return ""
	}
	note := ""
	if x.Failure != "" {
		note = "failed: " + x.Failure
	}
	if x.CannotResume != "" {
		if note != "" {
			note += "; "
		}
		note += x.CannotResume
	}
	return note
}

// mergeNested adds n to list: a child announced again keeps its place,
// and its title and description when the update leaves them out.
func mergeNested(list []NestedChild, n NestedChild) []NestedChild {
	i := slices.IndexFunc(list, func(x NestedChild) bool { return x.SessionID == n.SessionID })
	if i < 0 {
		return append(list, n)
	}
	if n.Title == "" {
		n.Title = list[i].Title
	}
	if n.Description == "" {
		n.Description = list[i].Description
	}
	list[i] = n
	return list
}

// DecodeExternal reads the unit's value; nil for a child that is not
// external (or a value written without the unit).
func DecodeExternal(raw json.RawMessage) *External {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var x External
	if json.Unmarshal(raw, &x) != nil {
		return nil
	}
	return &x
}

// nestedRows are the catalog rows of the children an external child's
// agent announced: mode nested, labelled with their title, running while
// the agent says so.
func nestedRows(x *External) []ListEntry {
	if x == nil {
		return nil
	}
	var out []ListEntry
	for _, n := range x.Nested {
		if session.ValidateID(n.SessionID) != nil {
			continue
		}
		act := ActivityInactive
		if n.State == "running" {
			act = ActivityRunning
		}
		label := n.Title
		if label == "" {
			label = n.Description
		}
		nc := n
		out = append(out, ListEntry{Kind: KindChild, ID: n.SessionID, Mode: ModeNested, Label: label, Activity: act, Nested: &nc})
	}
	return out
}
