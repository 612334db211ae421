package agent

// This file defines the inbox: Followup, Steer, Inject, Prompt and Cancel.
// Every inbox mutation is recorded as an agent/inbox/spliced event whose
// start index is the item's position in its target queue, appended under
// a.mu so the log and the in-memory queues never disagree.

import (
	"context"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Followup queues msg as one later turn (FIFO) and wakes the agent. It
// returns the message id (minted when msg.ID is empty).
func (a *Agent) Followup(msg session.Message) (string, error) {
	it, err := a.enqueue(msg, session.InboxNextTurn, true, nil)
	if err != nil {
		return "", err
	}
	return it.msg.ID, nil
}

// Steer delivers msg at the next step boundary of the open turn; the turn
// takes another step for it if it would otherwise complete. With no open
// turn it behaves like Followup.
func (a *Agent) Steer(msg session.Message) (string, error) {
	it, err := a.enqueue(msg, session.InboxNextStep, true, nil)
	if err != nil {
		return "", err
	}
	return it.msg.ID, nil
}

// Inject records msg without waking the agent; the next turn, whatever
// starts it, delivers it (before that turn's own message).
func (a *Agent) Inject(msg session.Message) (string, error) {
	it, err := a.enqueue(msg, session.InboxNextTurn, false, nil)
	if err != nil {
		return "", err
	}
	return it.msg.ID, nil
}

// Prompt queues msg like Followup and waits for the turn that claims it to
// end. When ctx ends first, that turn is cancelled with cause {kind:"user"}
// (or msg is withdrawn if still queued) and the aborted result is returned
// with a nil error. A message dropped by Cancel or Close returns an aborted
// result with the cancel cause and Turn 0.
func (a *Agent) Prompt(ctx context.Context, msg session.Message) (TurnResult, error) {
	waiter := make(chan TurnResult, 1)
	it, err := a.enqueue(msg, session.InboxNextTurn, true, waiter)
	if err != nil {
		return TurnResult{}, err
	}
	select {
	case r := <-waiter:
		return r, nil
	case <-ctx.Done():
	}
	a.withdraw(it, session.AbortReason{Kind: AbortUser})
	return <-waiter, nil
}

// normalize fills the defaults of an inbox message.
func (a *Agent) normalize(msg session.Message) session.Message {
	if msg.ID == "" {
		msg.ID = a.sess.NewID()
	}
	msg.Role = session.RoleUser
	if msg.Source.Kind == "" {
		msg.Source.Kind = session.SourceUser
	}
	if msg.Content == nil {
		msg.Content = []session.Block{}
	}
	return msg
}

func (a *Agent) enqueue(msg session.Message, target string, wake bool, waiter chan TurnResult) (*item, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, ErrClosed
	}
	if target == session.InboxNextStep && a.turn == nil {
		target = session.InboxNextTurn
	}
	it := &item{msg: a.normalize(msg), wake: wake, waiter: waiter}
	q := &a.nextTurn
	if target == session.InboxNextStep {
		q = &a.nextStep
	}
	_, err := a.sess.Append(session.TypeInboxSpliced, session.InboxSplicedData{
		Target: target, Start: len(*q), Inserted: []session.Message{it.msg},
	})
	if err != nil {
		return nil, fmt.Errorf("agent %s: record inbox insert: %w", a.ID(), err)
	}
	*q = append(*q, it)
	if wake {
		a.parked = false
		a.wakeLocked()
	}
	a.syncParkedLocked()
	return it, nil
}

// withdraw cancels the item a Prompt waits for: removed if still queued,
// otherwise the turn that claimed it is cancelled. The waiter always gets
// exactly one result.
func (a *Agent) withdraw(it *item, cause session.AbortReason) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.nextTurn {
		if x != it {
			continue
		}
		one := 1
		if _, err := a.sess.Append(session.TypeInboxSpliced, session.InboxSplicedData{
			Target: session.InboxNextTurn, Start: i, RemovedCount: &one,
			Inserted: []session.Message{}, Outcome: "canceled",
		}); err != nil {
			a.log.Warn("record inbox withdrawal failed", "err", err)
		}
		a.nextTurn = append(a.nextTurn[:i:i], a.nextTurn[i+1:]...)
		it.waiter <- abortedResult(cause)
		a.syncParkedLocked()
		a.settleIfQuietLocked()
		return
	}
	if it.turn != nil && a.turn == it.turn {
		it.turn.cancel(&AbortError{Reason: cause})
	}
}

// Cancel ends the open turn "aborted" with cause. With keepInbox false the
// unclaimed inbox items are dropped (recorded as canceled splices, waiting
// Prompts get an aborted result); with keepInbox true they stay parked and
// run, first and in order, after the next Followup or Steer. With
// keepInbox true, accepted waking work that no turn has claimed yet (the
// agent reports running, its loop has not opened the turn) counts as the
// current turn: that turn is opened and ends aborted, and only the items
// behind it are parked. Cancel does not wait for the turn to end (use
// WaitIdle).
func (a *Agent) Cancel(cause session.AbortReason, keepInbox bool) {
	if cause.Kind == "" {
		cause.Kind = AbortUser
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if keepInbox && a.turn == nil && a.runnableLocked() {
		// Accepted waking work is about to open a turn (the agent already
		// reports running) but the loop goroutine has not claimed it yet.
		// That turn is the current one: open it here so it ends aborted,
		// instead of parking its message and going idle as if nothing ran.
		// The loop goroutine (which exists: runnable work always has one)
		// runs the open turn next.
		a.startTurnLocked()
	}
	if keepInbox {
		if len(a.nextTurn)+len(a.nextStep) > 0 {
			a.parked = true
		}
	} else {
		a.dropLocked(cause)
	}
	a.syncParkedLocked()
	if a.turn != nil {
		a.turn.cancel(&AbortError{Reason: cause})
	}
	a.settleIfQuietLocked()
}

// dropLocked removes every unclaimed item, one canceled splice per
// non-empty target queue.
func (a *Agent) dropLocked(cause session.AbortReason) {
	for _, q := range []struct {
		target string
		items  *[]*item
	}{{session.InboxNextTurn, &a.nextTurn}, {session.InboxNextStep, &a.nextStep}} {
		n := len(*q.items)
		if n == 0 {
			continue
		}
		if _, err := a.sess.Append(session.TypeInboxSpliced, session.InboxSplicedData{
			Target: q.target, Start: 0, RemovedCount: &n,
			Inserted: []session.Message{}, Outcome: "canceled",
		}); err != nil {
			a.log.Warn("record inbox cancellation failed", "err", err)
		}
		for _, it := range *q.items {
			if it.waiter != nil {
				it.waiter <- abortedResult(cause)
			}
		}
		*q.items = nil
	}
	for _, r := range a.compactQ {
		r.waiter <- compactDone{data: session.CompactionData{Outcome: session.CompactionCancelled}, err: &AbortError{Reason: cause}}
	}
	a.compactQ = nil
	a.parked = false
	a.syncParkedLocked()
}

func abortedResult(cause session.AbortReason) TurnResult {
	return TurnResult{
		Reason: session.TurnEndReason{Kind: session.TurnEndAborted, Reason: &cause},
		Output: []session.Block{},
	}
}

// runnableLocked reports whether a turn should run now.
func (a *Agent) runnableLocked() bool {
	if a.closed {
		return false
	}
	if len(a.compactQ) > 0 {
		return true // /compact runs even while cancelled items stay parked
	}
	if a.parked {
		return false
	}
	if len(a.nextStep) > 0 {
		return true
	}
	for _, it := range a.nextTurn {
		if it.wake {
			return true
		}
	}
	return false
}

// wakeLocked marks the agent running and starts the loop goroutine if
// there is runnable work and no loop yet.
func (a *Agent) wakeLocked() {
	if !a.runnableLocked() {
		return
	}
	a.setRunningLocked()
	if a.looping {
		return // the loop picks the work up
	}
	a.looping = true
	a.loopDone = make(chan struct{})
	go a.loop(a.loopDone)
}

func (a *Agent) setRunningLocked() {
	a.status.Store(StatusRunning)
	if a.idleClosed {
		a.idle = make(chan struct{})
		a.idleClosed = false
	}
}

// settleIfQuietLocked marks an agent without a loop goroutine idle again
// (after Cancel or a withdrawal emptied its queue before a loop started).
func (a *Agent) settleIfQuietLocked() {
	if a.looping || a.turn != nil || a.runnableLocked() {
		return
	}
	a.status.Store(StatusIdle)
	if !a.idleClosed {
		close(a.idle)
		a.idleClosed = true
	}
}

func (a *Agent) syncParkedLocked() {
	n := 0
	if a.parked {
		n = len(a.nextTurn) + len(a.nextStep)
	}
	a.parkedN.Store(int64(n))
}
