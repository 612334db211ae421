package subagent

// This file is the subagentQuestion projection unit: the last question of
// a child refused because nobody answered it within the deadline
// (delegation.TypeQuestionRefused, which the ACP adapter writes into the
// child's own log). Listings read it like the usage unit, from the live
// snapshot, the projection cache or the log, so "question refused:
// <reason>" survives a restart.

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Key and state version of the question unit.
const (
	KeyQuestion     = "subagentQuestion"
	QuestionVersion = 1
)

// QuestionRefusedState is the State of a refused question in listings
// (the same word the ACP adapter's subagents/list rows use).
const QuestionRefusedState = "refused"

// Question is a child's last refused question as listings show it.
type Question struct {
	State  string `json:"state"` // QuestionRefusedState
	Title  string `json:"title"`
	Reason string `json:"reason"`
}

// String is the listing text: "question refused: <reason>".
func (q Question) String() string { return "question " + q.State + ": " + q.Reason }

// QuestionUnit returns the subagentQuestion unit. A record whose payload
// does not decode is skipped.
func QuestionUnit() projection.Unit {
	return projection.Fold[*Question]{
		Name:    KeyQuestion,
		Version: QuestionVersion,
		Step: func(cur *Question, ev session.Event) (*Question, error) {
			if ev.Type != delegation.TypeQuestionRefused {
				return cur, nil
			}
			d, err := session.DecodeData[delegation.QuestionRefused](ev)
			if err != nil || d.Reason == "" {
				return cur, nil
			}
			return &Question{State: QuestionRefusedState, Title: d.Title, Reason: d.Reason}, nil
		},
		Render: func(cur *Question) (any, error) {
			if cur == nil {
				return nil, nil
			}
			return *cur, nil
		},
	}
}

// questionOf decodes the unit's value among values; nil when there is
// none (or it is malformed, or a cache was written without the unit).
func questionOf(values map[string]json.RawMessage) *Question {
	raw := values[KeyQuestion]
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var q Question
	if json.Unmarshal(raw, &q) != nil || q.Reason == "" {
		return nil
	}
	return &q
}
