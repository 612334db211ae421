package driver

// This file holds the stop reasons of a child and the folds that derive
// them from the child's own log (subagent-contract.md §2.2 step 6, §2.8).

import "github.com/acp-agent/acp-agent/agent/session"

// Stop reasons of a child run.
const (
	StopCompleted = "completed"
	StopAborted   = "aborted"
	StopError     = "error"
	StopMaxTokens = "max-tokens"
	StopRefusal   = "refusal"
	// StopMaxTurns (an extension reason): the child's turn hit its limit
	// of model requests (an agent definition's maxTurns, else the
	// runtime's step limit) before it finished.
	StopMaxTurns = "max-turns"
	// StopBudget and StopTimeout (extension reasons): the child, or its
	// tree, reached a spending limit (maxTokens, maxCostUsd) or its
	// turn ran out of its time limit (timeout).
	StopBudget  = "budget"
	StopTimeout = "timeout"
)

// turnFacts is one turn of a child log, reduced to what the stop-reason
// folds need.
type turnFacts struct {
	ended   bool
	reason  session.TurnEndReason
	stepped bool // had a step/start
	claimed bool // claimed inbox input (non-cancel splice removing items)
	endAt   int  // index of the turn/end event
}

// turnsOf reduces events to turns, plus the indices of the events that
// dropped accepted work unrun (cancel splices).
func turnsOf(events []session.Event) (turns []turnFacts, drops []int) {
	var cur *turnFacts
	for idx, ev := range events {
		switch ev.Type {
		case session.TypeTurnStart:
			turns = append(turns, turnFacts{})
			cur = &turns[len(turns)-1]
		case session.TypeStepStart:
			if cur != nil {
				cur.stepped = true
			}
		case session.TypeTurnEnd:
			if cur != nil {
				if d, err := session.DecodeData[session.TurnEndData](ev); err == nil {
					cur.reason = d.Reason
				}
				cur.ended = true
				cur.endAt = idx
				cur = nil
			}
		case session.TypeInboxSpliced:
			d, err := session.DecodeData[session.InboxSplicedData](ev)
			if err != nil || d.RemovedCount == nil {
				continue
			}
			if d.Outcome == "canceled" {
				if len(d.Inserted) == 0 {
					drops = append(drops, idx)
				}
				continue
			}
			if cur != nil && *d.RemovedCount > 0 {
				cur.claimed = true
			}
		}
	}
	return turns, drops
}

func (t turnFacts) accounts() bool {
	if t.stepped {
		return true
	}
	if !t.claimed {
		return false
	}
	switch t.reason.Kind {
	case session.TurnEndBlocked, session.TurnEndAborted, session.TurnEndInterrupted, session.TurnEndError,
		session.TurnEndBudget, session.TurnEndTimeout:
		return true
	}
	return false
}

// lastAccounting returns the index of the last turn that accounts for
// consumed work, or -1.
func lastAccounting(turns []turnFacts) int {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].accounts() {
			return i
		}
	}
	return -1
}

// OneShotStopReason maps a one-shot child's own events to its stop reason;
// cancelled says the run was cancelled by its signal or by Dispose.
func OneShotStopReason(events []session.Event, cancelled bool) string {
	turns, _ := turnsOf(events)
	i := lastAccounting(turns)
	stop := StopError
	if i >= 0 {
		switch turns[i].reason.Kind {
		case session.TurnEndCompleted:
			stop = StopCompleted
		case session.TurnEndMaxTokens:
			stop = StopMaxTokens
		case session.TurnEndAborted:
			stop = StopAborted
		case session.TurnEndBlocked:
			stop = StopRefusal
		case session.TurnEndMaxSteps:
			stop = StopMaxTurns
		case session.TurnEndBudget:
			stop = StopBudget
		case session.TurnEndTimeout:
			stop = StopTimeout
		}
	}
	if cancelled && stop != StopCompleted {
		stop = StopAborted
	}
	return stop
}

// OneShotDiagnostic returns why a one-shot child's run failed, from its
// own events: the error recorded on the turn/end of its last accounting
// turn ("server error (HTTP 500) after 4 attempts: …"), with the error's
// code when the message lacks it; "" when that turn did not end in error.
// The parent's result and the editor's tool call carry it, so the cause
// is not only in the child's log.
func OneShotDiagnostic(events []session.Event) string {
	turns, _ := turnsOf(events)
	i := lastAccounting(turns)
	if i < 0 || turns[i].reason.Kind != session.TurnEndError || turns[i].reason.Error == nil {
		return ""
	}
	e := turns[i].reason.Error
	if e.Message == "" {
		return e.Code
	}
	return e.Message
}

// EpochStopReason maps the events of one continuable activation epoch to
// its stop reason (subagent-contract.md §2.8, consumed-work fold).
func EpochStopReason(events []session.Event) string {
	turns, drops := turnsOf(events)
	i := lastAccounting(turns)
	dropped := false
	for _, at := range drops {
		if i < 0 || (turns[i].ended && at > turns[i].endAt) {
			dropped = true
		}
	}
	if i < 0 {
		if dropped {
			return StopAborted
		}
		return StopCompleted
	}
	switch turns[i].reason.Kind {
	case session.TurnEndMaxTokens:
		return StopMaxTokens
	case session.TurnEndAborted, session.TurnEndInterrupted:
		return StopAborted
	case session.TurnEndError:
		return StopError
	case session.TurnEndBlocked:
		return StopRefusal
	case session.TurnEndMaxSteps:
		return StopMaxTurns
	case session.TurnEndBudget:
		return StopBudget
	case session.TurnEndTimeout:
		return StopTimeout
	case session.TurnEndCompleted:
		if dropped {
			return StopAborted
		}
		return StopCompleted
	}
	return StopError
}
