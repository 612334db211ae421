package projection

// This file defines the built-in units that need nothing above
// agent/session: subagentTiming, title and repaired. The subagent identity unit lives
// in package subagent, next to the descriptor parser it uses.

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Keys and state versions of the built-in units.
const (
	KeyTiming       = "subagentTiming"
	TimingVersion   = 2
	KeyTitle        = "title"
	TitleVersion    = 1
	KeyRepaired     = "repaired"
	RepairedVersion = 1
)

// TimingState is the state of the subagentTiming unit
// (subagent-contract.md §1.5.2).
type TimingState struct {
	SettledMs        int64
	Active           *ActiveSpan
	PendingTurnStart *int64
	DescriptorSeen   bool
}

// ActiveSpan is the open turn span of a subagent: it started at Since and
// the last event seen in it has time Through (epoch ms).
type ActiveSpan struct {
	Since   int64 `json:"since"`
	Through int64 `json:"through"`
}

// TimingView is the wire value of the subagentTiming unit.
type TimingView struct {
	SettledMs int64       `json:"settledMs"`
	Active    *ActiveSpan `json:"active,omitempty"`
}

// Timing returns the subagentTiming unit: the settled working time of a
// subagent and its currently open turn span, counted only from its
// descriptor on. It never fails: it reads event types and times only.
func Timing() Unit {
	return Fold[TimingState]{
		Name:    KeyTiming,
		Version: TimingVersion,
		Step:    timingStep,
		Render: func(s TimingState) (any, error) {
			return TimingView{SettledMs: s.SettledMs, Active: s.Active}, nil
		},
	}
}

func timingStep(s TimingState, ev session.Event) (TimingState, error) {
	t := ev.Time
	switch ev.Type {
	case session.TypeTurnStart:
		if s.DescriptorSeen {
			s.Active = &ActiveSpan{Since: t, Through: t}
		} else {
			s.PendingTurnStart = &t
		}
	case session.TypeDescriptor:
		next := TimingState{DescriptorSeen: true}
		switch {
		case s.Active != nil:
			next.Active = &ActiveSpan{Since: s.Active.Since, Through: t}
		case s.PendingTurnStart != nil:
			next.Active = &ActiveSpan{Since: *s.PendingTurnStart, Through: t}
		}
		s = next
	case session.TypeTurnEnd:
		if !s.DescriptorSeen {
			s.PendingTurnStart = nil
		} else if s.Active != nil {
			s.SettledMs += max(0, t-s.Active.Since)
			s.Active = nil
		}
	default:
		if s.Active != nil && s.Active.Through != t {
			// Spans are replaced, never mutated: views already handed out
			// may share the old one.
			s.Active = &ActiveSpan{Since: s.Active.Since, Through: t}
		}
	}
	return s, nil
}

// Title returns the title unit: the latest session/title title, or null.
// A malformed title event is skipped rather than poisoning the session.
func Title() Unit {
	return Fold[*string]{
		Name:    KeyTitle,
		Version: TitleVersion,
		Step: func(cur *string, ev session.Event) (*string, error) {
			if ev.Type != session.TypeSessionTitle {
				return cur, nil
			}
			var d session.TitleData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return cur, nil
			}
			return &d.Title, nil
		},
		Render: func(cur *string) (any, error) { return cur, nil },
	}
}

// Repaired returns the repaired unit: the summary of the last repair of
// the session's log (session.Repaired: the lines it dropped, the
// backup), or null for a log never repaired. Listings read it to show a
// repaired session as such, not as healthy, without reading its log. A
// malformed summary is skipped.
func Repaired() Unit {
	return Fold[*session.RepairedData]{
		Name:    KeyRepaired,
		Version: RepairedVersion,
		Step: func(cur *session.RepairedData, ev session.Event) (*session.RepairedData, error) {
			if ev.Type != session.TypeRepaired {
				return cur, nil
			}
			var d session.RepairedData
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.Filler {
				return cur, nil
			}
			return &d, nil
		},
		Render: func(cur *session.RepairedData) (any, error) { return cur, nil },
	}
}
