package budgets

// This file is the subagentUsage projection unit: a child's own tokens
// per route, counted from its descriptor on (as subagentTiming counts its
// time), so listings read them from the projection cache and the index
// without reading the log.

import (
	"encoding/json"
	"slices"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Key and state version of the usage unit.
const (
	KeyUsage     = "subagentUsage"
	UsageVersion = 1
)

// unitState is the unit's state: the descriptor gate and the ledger.
type unitState struct {
	seen   bool
	ledger Ledger
}

// Unit returns the subagentUsage unit. It never fails: a response whose
// payload does not decode is not counted.
func Unit() projection.Unit {
	return projection.Fold[unitState]{
		Name:    KeyUsage,
		Version: UsageVersion,
		Step: func(s unitState, ev session.Event) (unitState, error) {
			if ev.Type == session.TypeDescriptor {
				s.seen = true
				return s, nil
			}
			if !s.seen {
				return s, nil
			}
			r, u, ok := responseUsage(ev)
			if !ok {
				return s, nil
			}
			// States may be shared with earlier snapshots: copy on write.
			s.ledger.Routes = slices.Clone(s.ledger.Routes)
			s.ledger.Count(r, u)
			return s, nil
		},
		Render: func(s unitState) (any, error) {
			if len(s.ledger.Routes) == 0 {
				return nil, nil
			}
			return s.ledger, nil
		},
	}
}

// DecodeLedger reads the unit's value; a missing, null or malformed value
// is no usage (ok false for a malformed one).
func DecodeLedger(raw json.RawMessage) (Ledger, bool) {
	var l Ledger
	if len(raw) == 0 || string(raw) == "null" {
		return l, true
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		return Ledger{}, false
	}
	return l, true
}
