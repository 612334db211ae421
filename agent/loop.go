package agent

// This file defines the turn loop: turns made of steps (pre-step hooks, one
// model call, the tools it asked for), recorded on the session in the order
// of reference-scenarios.md §d "Common parent prefix".

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// turnState is the open turn.
type turnState struct {
	num      int
	ctx      context.Context
	cancel   context.CancelCauseFunc
	startSeq int64
	first    bool        // first turn of the session's own suffix
	claimed  []*item     // next-turn items claimed at turn start
	compact  *compactReq // a Compact turn: it runs the compaction, no steps
	// compactDone is a Compact turn's outcome, handed to its waiter after turn/end.
	compactDone compactDone
	// compactFailed: an automatic compaction of this turn did not complete.
	compactFailed bool
}

// loop runs turns while there is runnable work, then reports idleness.
// It is the only goroutine an Agent starts; done is closed on exit.
func (a *Agent) loop(done chan struct{}) {
	defer close(done)
	for {
		a.mu.Lock()
		t := a.turn // opened (and cancelled) by Cancel before this loop claimed it
		if t == nil {
			t = a.startTurnLocked()
		}
		if t == nil {
			a.status.Store(StatusIdle)
			a.mu.Unlock()
			if a.opts.OnIdle != nil {
				a.opts.OnIdle(a)
			}
			a.mu.Lock()
			if a.turn != nil || a.runnableLocked() {
				a.setRunningLocked()
				a.mu.Unlock()
				continue
			}
			a.looping = false
			if !a.idleClosed {
				close(a.idle)
				a.idleClosed = true
			}
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		a.runTurn(t)
	}
}

// startTurnLocked opens the next turn if there is runnable work: it
// appends turn/start and the next-turn claim (the items up to and
// including the first waking one). It returns nil when there is no work.
func (a *Agent) startTurnLocked() *turnState {
	if !a.runnableLocked() {
		return nil
	}
	var creq *compactReq
	if len(a.compactQ) > 0 && len(a.nextStep) == 0 {
		creq, a.compactQ = a.compactQ[0], a.compactQ[1:]
	}
	n := 0
	for i, it := range a.nextTurn {
		if creq != nil {
			break // a Compact turn claims no messages
		}
		if it.wake {
			n = i + 1
			break
		}
	}
	if n == 0 && creq == nil {
		// Woken by leftover steering only: the waiting injections ride along.
		n = len(a.nextTurn)
	}
	t := &turnState{num: a.lastTurn + 1, first: a.ownTurns == 0, compact: creq}
	t.ctx, t.cancel = context.WithCancelCause(a.life)
	if d := a.opts.TurnTimeout; d > 0 {
		ctx, stop := context.WithTimeoutCause(t.ctx, d, ErrTurnTimeout)
		cancel := t.cancel
		t.ctx, t.cancel = ctx, func(err error) { cancel(err); stop() }
	}
	ev, err := a.sess.Append(session.TypeTurnStart, session.TurnData{Turn: t.num})
	if err != nil {
		// The session is gone (removed from its store): nothing can run.
		a.log.Error("cannot start turn", "err", err)
		t.cancel(err)
		if creq != nil {
			creq.waiter <- compactDone{err: err}
		}
		a.dropQueuesSilentlyLocked(session.AbortReason{Kind: AbortDisposed})
		return nil
	}
	a.lastTurn, a.ownTurns = t.num, a.ownTurns+1
	t.startSeq = ev.Seq
	if n > 0 {
		if _, err := a.sess.Append(session.TypeInboxSpliced, session.InboxSplicedData{
			Target: session.InboxNextTurn, Start: 0, RemovedCount: &n, Inserted: []session.Message{},
		}); err != nil {
			a.log.Error("record inbox claim failed", "err", err)
		}
		t.claimed = append([]*item(nil), a.nextTurn[:n]...)
		a.nextTurn = append([]*item(nil), a.nextTurn[n:]...)
		for _, it := range t.claimed {
			it.turn = t
		}
	}
	a.turn = t
	return t
}

// dropQueuesSilentlyLocked empties the queues without recording (the log
// cannot be written) and releases waiting Prompts.
func (a *Agent) dropQueuesSilentlyLocked(cause session.AbortReason) {
	for _, q := range [][]*item{a.nextTurn, a.nextStep} {
		for _, it := range q {
			if it.waiter != nil {
				it.waiter <- abortedResult(cause)
			}
		}
	}
	for _, r := range a.compactQ {
		r.waiter <- compactDone{data: session.CompactionData{Outcome: session.CompactionCancelled}, err: &AbortError{Reason: cause}}
	}
	a.nextTurn, a.nextStep, a.compactQ = nil, nil, nil
	a.syncParkedLocked()
}

// runTurn runs an open turn to its end, appends turn/end, checkpoints and
// hands the result to the Prompts whose messages the turn claimed.
func (a *Agent) runTurn(t *turnState) {
	var reason session.TurnEndReason
	if t.compact != nil {
		reason = a.runCompactTurn(t)
	} else {
		reason = a.runSteps(t)
	}
	if reason.Kind == session.TurnEndAborted && errors.Is(context.Cause(t.ctx), ErrTurnTimeout) {
		reason = session.TurnEndReason{Kind: session.TurnEndTimeout, Detail: fmt.Sprintf("ran past its time limit of %s (timeout)", a.opts.TurnTimeout)}
	}
	ctx := context.WithoutCancel(t.ctx)
	end, err := a.sess.Append(session.TypeTurnEnd, session.TurnEndData{Turn: t.num, Reason: reason})
	if err != nil {
		a.log.Error("record turn end failed", "turn", t.num, "err", err)
	}
	a.checkpoint(ctx)
	t.cancel(nil)

	res := TurnResult{Turn: t.num, Reason: reason}
	var evs []session.Event
	if err == nil {
		if evs, err = a.sess.EventsFrom(int(t.startSeq)); err != nil {
			a.log.Error("read the turn's events for its output", "turn", t.num, "err", err)
		}
	}
	if err == nil {
		if k := int(end.Seq - t.startSeq + 1); k <= len(evs) {
			evs = evs[:k]
		}
		res.Output = FinalOutput(evs)
	} else {
		res.Output = []session.Block{}
	}
	a.mu.Lock()
	a.turn = nil
	a.mu.Unlock()
	for _, it := range t.claimed {
		if it.waiter != nil {
			it.waiter <- res
		}
	}
	if t.compact != nil {
		t.compact.waiter <- t.compactDone
	}
}

// syncTo makes the log durable up to seq (a write-ahead point).
func (a *Agent) syncTo(ctx context.Context, seq int64) error {
	if a.opts.Journal == nil {
		return nil
	}
	err := a.opts.Journal.SyncTo(ctx, a.sess.ID(), seq)
	if err != nil {
		a.log.Warn("checkpoint failed", "seq", seq, "err", err)
	}
	return err
}

// writeErr is the journal's sticky write failure of this session, if it
// reports one (JournalErr).
func (a *Agent) writeErr() error {
	if je, ok := a.opts.Journal.(JournalErr); ok {
		return je.WriteErr(a.sess.ID())
	}
	return nil
}

// checkpoint makes everything appended so far durable.
func (a *Agent) checkpoint(ctx context.Context) error {
	return a.syncTo(ctx, int64(a.sess.Len())-1)
}

// abortReason returns the aborted turn-end reason of t's cancellation.
func abortedReason(t *turnState) session.TurnEndReason {
	r := abortReasonOf(context.Cause(t.ctx))
	return session.TurnEndReason{Kind: session.TurnEndAborted, Reason: &r}
}

func errorReason(err error, code string) session.TurnEndReason {
	return session.TurnEndReason{Kind: session.TurnEndError, Error: errorInfo(err, code)}
}

// stepOutcome is how one step ended.
type stepOutcome struct {
	reason session.TurnEndReason
	again  bool // the turn continues with another step
}

// runSteps runs the steps of t and returns the turn-end reason. Every step
// it opens is closed with step/end.
func (a *Agent) runSteps(t *turnState) session.TurnEndReason {
	for step := 1; ; step++ {
		if t.ctx.Err() != nil {
			return abortedReason(t)
		}
		if step > a.opts.MaxSteps {
			return session.TurnEndReason{Kind: session.TurnEndMaxSteps}
		}
		if a.opts.Limit != nil {
			if r := a.opts.Limit(t.ctx, a, StepInfo{Turn: t.num, Step: step}); r != nil {
				return *r
			}
		}
		// Steering messages waiting now are delivered in this step.
		a.gateStep(t)
		a.mu.Lock()
		steer := a.nextStep
		a.nextStep = nil
		if k := len(steer); k > 0 {
			if _, err := a.sess.Append(session.TypeInboxSpliced, session.InboxSplicedData{
				Target: session.InboxNextStep, Start: 0, RemovedCount: &k, Inserted: []session.Message{},
			}); err != nil {
				a.mu.Unlock()
				return errorReason(err, CodeSessionWrite)
			}
		}
		a.mu.Unlock()

		call := a.stepCount
		if _, err := a.sess.Append(session.TypeStepStart, session.StepData{Turn: t.num, Step: step}); err != nil {
			return errorReason(err, CodeSessionWrite)
		}
		a.stepCount++
		out := a.runStep(t, step, call, steer)
		if _, err := a.sess.Append(session.TypeStepEnd, session.StepData{Turn: t.num, Step: step}); err != nil && out.again {
			return errorReason(err, CodeSessionWrite)
		}
		if !out.again {
			if out.reason.Kind == session.TurnEndCompleted {
				a.gateStep(t)
			}
			a.mu.Lock()
			pending := len(a.nextStep) > 0
			a.mu.Unlock()
			if !pending || out.reason.Kind != session.TurnEndCompleted || t.ctx.Err() != nil {
				return out.reason
			}
		}
	}
}

// gateStep asks Options.StepGate, when set, before the steering messages
// waiting for the next model call are looked at.
func (a *Agent) gateStep(t *turnState) {
	if a.opts.StepGate == nil || t.ctx.Err() != nil {
		return
	}
	a.opts.StepGate(t.ctx, model.Caller{SessionID: a.sess.ID(), ScriptKey: a.opts.ScriptKey, Call: a.stepCount})
}

// runStep runs one open step: delivers messages, runs hooks, calls the
// model (retrying as retryReply decides) and the tools it asked for.
func (a *Agent) runStep(t *turnState, step, call int, steer []*item) stepOutcome {
	if err := a.deliver(t, step, steer); err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	if out, enter := a.runHooks(t, step); !enter {
		return out
	}
	if err := a.ensureSystem(t.ctx); err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	if err := a.checkpoint(t.ctx); err != nil {
		return failed(t, err, CodeCheckpointFailed)
	}
	if t.ctx.Err() != nil {
		return stepOutcome{reason: abortedReason(t)}
	}
	if a.opts.Model == nil {
		return failed(t, model.ErrNotConfigured, CodeModelNotConfigured)
	}

	req, err := a.request(call)
	if err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	if a.maybeCompact(t, req) {
		if req, err = a.request(call); err != nil {
			return failed(t, err, CodeSessionWrite)
		}
	}
	if t.ctx.Err() != nil {
		return stepOutcome{reason: abortedReason(t)}
	}
	if req, err = a.fitNewest(t, req); err != nil {
		return failed(t, err, CodeContextTooLong)
	}
	reply, err := a.stream(t, step, req)
	if err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	if reply, req, err = a.retryReply(t, step, req, reply); err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	reply.route = req.Route
	if t.ctx.Err() != nil || reply.err != nil {
		if reply.streamed() {
			if _, err := a.appendAssistant(t, step, reply, true); err != nil {
				return failed(t, err, CodeSessionWrite)
			}
		}
		if t.ctx.Err() != nil {
			return stepOutcome{reason: abortedReason(t)}
		}
		return stepOutcome{reason: errorReason(reply.err, CodeModelFailed)}
	}
	if _, err := a.appendAssistant(t, step, reply, false); err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	return a.runCalls(t, step, reply)
}

// failed is the outcome of a step that failed with err: aborted if the
// turn was cancelled meanwhile, else an error with code.
func failed(t *turnState, err error, code string) stepOutcome {
	if t.ctx.Err() != nil {
		return stepOutcome{reason: abortedReason(t)}
	}
	return stepOutcome{reason: errorReason(err, code)}
}

// deliver appends the step's user messages (the turn's claimed messages
// in its first step, then steering) and, in the first step of the first
// own turn, the fallback title.
func (a *Agent) deliver(t *turnState, step int, steer []*item) error {
	var items []*item
	if step == 1 {
		items = append(items, t.claimed...)
	}
	items = append(items, steer...)
	titleSeq, title := int64(-1), ""
	for _, it := range items {
		ev, err := a.sess.Append(session.TypeUserMessage, it.msg, session.WithSurface(session.AppendOp))
		if err != nil {
			return err
		}
		if titleSeq < 0 && t.first && step == 1 && it.msg.Source.Kind == session.SourceUser {
			titleSeq, title = ev.Seq, FallbackTitle(it.msg.Content)
		}
	}
	if title == "" {
		return nil
	}
	_, err := a.sess.Append(session.TypeSessionTitle, session.TitleData{
		Title: title, MessageSeqs: []int64{titleSeq}, Source: session.Source{Kind: "fallback"},
	})
	return err
}

// runHooks runs the pre-step hooks; enter is false when the step must not
// call the model, with the turn's outcome.
func (a *Agent) runHooks(t *turnState, step int) (out stepOutcome, enter bool) {
	info := StepInfo{Turn: t.num, Step: step, FirstEnter: !a.entered.Load()}
	for _, h := range a.opts.PreStep {
		d, err := h(t.ctx, a, info)
		if err != nil {
			return failed(t, err, CodeHookFailed), false
		}
		if t.ctx.Err() != nil {
			return stepOutcome{reason: abortedReason(t)}, false
		}
		if d == Reject {
			return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndBlocked}}, false
		}
	}
	a.entered.Store(true)
	return stepOutcome{}, true
}
