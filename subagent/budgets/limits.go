package budgets

// This file is the limits a child runs under, the narrowing rule, the
// check that ends a turn, the one-time warning near a limit and the
// durable record a cold resume reads back.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Stop reasons of a limit (the turn-end kinds and the children's stop
// reasons alike). A turn limit keeps the loop's own "max-steps" kind.
const (
	StopBudget  = "budget"
	StopTimeout = "timeout"
)

// Limits bound a child. Zero fields are no limit. MaxTokens and
// MaxCostUSD count the child's whole life (its own log, also across cold
// resumes); MaxTurns bounds the model requests of each of its turns and
// Timeout the wall time of each of its turns.
type Limits struct {
	MaxTokens  int           `json:"maxTokens,omitempty"`
	MaxCostUSD float64       `json:"maxCostUsd,omitempty"`
	MaxTurns   int           `json:"maxTurns,omitempty"`
	Timeout    time.Duration `json:"-"`
}

// Zero reports whether l limits nothing.
func (l Limits) Zero() bool { return l == Limits{} }

// Validate refuses negative or non-finite limits.
func (l Limits) Validate() error {
	switch {
	case l.MaxTokens < 0:
		return fmt.Errorf("maxTokens must not be negative, got %d", l.MaxTokens)
	case l.MaxCostUSD < 0 || math.IsNaN(l.MaxCostUSD) || math.IsInf(l.MaxCostUSD, 0):
		return fmt.Errorf("maxCostUsd must be a finite amount not below 0, got %v", l.MaxCostUSD)
	case l.MaxTurns < 0:
		return fmt.Errorf("maxTurns must not be negative, got %d", l.MaxTurns)
	case l.Timeout < 0:
		return fmt.Errorf("timeout must not be negative, got %s", l.Timeout)
	}
	return nil
}

// WidenError is a call asking for more than its definition or session
// allows.
type WidenError struct {
	Field   string
	Asked   string
	Allowed string
}

func (e *WidenError) Error() string {
	return fmt.Sprintf("%s %s would widen the limit %s that applies here: a call may only narrow limits", e.Field, e.Asked, e.Allowed)
}

// Narrow applies asked (a call's optional limits) to base (what the
// definition or the session allows): each field asked may lower base's,
// or set one base leaves open; asking above base is a *WidenError.
func Narrow(base, asked Limits) (Limits, error) {
	if err := asked.Validate(); err != nil {
		return base, err
	}
	out := base
	if asked.MaxTokens > 0 {
		if base.MaxTokens > 0 && asked.MaxTokens > base.MaxTokens {
			return base, &WidenError{"maxTokens", fmt.Sprint(asked.MaxTokens), fmt.Sprint(base.MaxTokens)}
		}
		out.MaxTokens = asked.MaxTokens
	}
	if asked.MaxCostUSD > 0 {
		if base.MaxCostUSD > 0 && asked.MaxCostUSD > base.MaxCostUSD {
			return base, &WidenError{"maxCostUsd", fmt.Sprint(asked.MaxCostUSD), fmt.Sprint(base.MaxCostUSD)}
		}
		out.MaxCostUSD = asked.MaxCostUSD
	}
	if asked.MaxTurns > 0 {
		if base.MaxTurns > 0 && asked.MaxTurns > base.MaxTurns {
			return base, &WidenError{"maxTurns", fmt.Sprint(asked.MaxTurns), fmt.Sprint(base.MaxTurns)}
		}
		out.MaxTurns = asked.MaxTurns
	}
	if asked.Timeout > 0 {
		if base.Timeout > 0 && asked.Timeout > base.Timeout {
			return base, &WidenError{"timeout", asked.Timeout.String(), base.Timeout.String()}
		}
		out.Timeout = asked.Timeout
	}
	return out, nil
}

// Verdict is a check's outcome: Reached names the limit reached ("" for
// none), Detail says it for people, Fraction is how far the nearest
// spending limit is used (0..1+).
type Verdict struct {
	Reached  string
	Detail   string
	Fraction float64
}

// Check compares u with the spending limits of l (tokens, cost). A cost
// limit over a usage whose cost is not known counts nothing: no cost is
// made up (its tokens still count against a token limit).
func Check(l Limits, u budget.Usage) Verdict {
	var v Verdict
	if l.MaxTokens > 0 {
		f := float64(u.Tokens()) / float64(l.MaxTokens)
		v.Fraction = max(v.Fraction, f)
		if u.Tokens() >= l.MaxTokens {
			v.Reached = "maxTokens"
			v.Detail = fmt.Sprintf("used %d tokens of its limit of %d (maxTokens)", u.Tokens(), l.MaxTokens)
		}
	}
	if l.MaxCostUSD > 0 && u.CostKnown() {
		f := u.Cost / l.MaxCostUSD
		v.Fraction = max(v.Fraction, f)
		if v.Reached == "" && u.Cost >= l.MaxCostUSD {
			v.Reached = "maxCostUsd"
			v.Detail = fmt.Sprintf("spent %s of its limit of %s (maxCostUsd)", budget.FormatUSD(u.Cost), budget.FormatUSD(l.MaxCostUSD))
		}
	}
	return v
}

// WarnAt is the fraction of a spending limit at which a child is warned
// once.
const WarnAt = 0.8

// WarningMarker starts the warning message, so a fold of the log finds
// it (Counter.Warned).
const WarningMarker = "[budget warning]"

// Warning is the steer message a child gets once at WarnAt of a limit.
func Warning(l Limits, u budget.Usage) string {
	var parts []string
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", u.Tokens(), l.MaxTokens))
	}
	if l.MaxCostUSD > 0 && u.CostKnown() {
		parts = append(parts, fmt.Sprintf("%s of %s", budget.FormatUSD(u.Cost), budget.FormatUSD(l.MaxCostUSD)))
	}
	return WarningMarker + " You have used " + strings.Join(parts, " and ") +
		" of your budget. Finish the task now: wrap up and give your final answer before the limit stops you."
}

// TypeLimits is the event type of the durable limits record, written
// once into a continuable child's creation seed (ignorable: an older
// build still reads the child).
const TypeLimits = "subagent/limits"

// record is the payload of TypeLimits (Timeout in milliseconds).
type record struct {
	MaxTokens  int     `json:"maxTokens,omitempty"`
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	MaxTurns   int     `json:"maxTurns,omitempty"`
	TimeoutMs  int64   `json:"timeoutMs,omitempty"`
}

// Event renders l as the limits record at seq (time now, epoch ms).
func (l Limits) Event(seq, now int64) (session.Event, error) {
	if err := l.Validate(); err != nil {
		return session.Event{}, err
	}
	data, err := json.Marshal(record{MaxTokens: l.MaxTokens, MaxCostUSD: l.MaxCostUSD, MaxTurns: l.MaxTurns, TimeoutMs: l.Timeout.Milliseconds()})
	if err != nil {
		return session.Event{}, err
	}
	return session.Event{Type: TypeLimits, Seq: seq, Time: now, Data: data, Ignorable: true}, nil
}

// FoldLimits returns the first limits record of events (a child's own),
// ok false when there is none. A malformed record is an error: a child
// must not resume without the limits it was started with.
func FoldLimits(events []session.Event) (Limits, bool, error) {
	for _, ev := range events {
		if ev.Type != TypeLimits {
			continue
		}
		var r record
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			return Limits{}, false, fmt.Errorf("persisted subagent limits record at seq %d is malformed: %w", ev.Seq, err)
		}
		l := Limits{MaxTokens: r.MaxTokens, MaxCostUSD: r.MaxCostUSD, MaxTurns: r.MaxTurns, Timeout: time.Duration(r.TimeoutMs) * time.Millisecond}
		if err := l.Validate(); err != nil {
			return Limits{}, false, fmt.Errorf("persisted subagent limits record at seq %d is malformed: %w", ev.Seq, err)
		}
		return l, true, nil
	}
	return Limits{}, false, nil
}
