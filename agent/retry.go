package agent

// This file is what a step does when its model call fails in a way it can
// cure: one loop (retryReply) asks a pure decision (decideRetry) which
// remedy the failed reply gets, each failure kind drawing on its own
// budget (retryBudget), so the remedies a step applies do not depend on
// the order its failures came in.

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// failure is how a model reply failed, as far as its step can cure it.
type failure int

const (
	// failNone: the reply stands (complete, failed beyond cure, or its
	// turn was cancelled).
	failNone failure = iota
	// failOverflow: refused before any output as longer than the context
	// window (model.ErrContextLength): the provider counted more than we
	// estimated.
	failOverflow
	// failBroken: the stream stalled or was cut (model.ErrStreamBroken).
	failBroken
)

// remedy is what a step does about a failed reply.
type remedy int

const (
	// remedyNone keeps the reply as it is.
	remedyNone remedy = iota
	// remedyCompact compacts the view and sends a request rebuilt from it.
	remedyCompact
	// remedyShrink cuts the middle of the request's long texts to the
	// known window (unknown: to half the request) and sends it again.
	remedyShrink
	// remedyResend records the partial reply as retried and sends the
	// request again.
	remedyResend
	// remedyTooLong gives up: the reply fails with a *TooLongError.
	remedyTooLong
)

// retries counts the remedies of one step.
type retries struct{ compact, shrink, resend int }

// retryBudget is how often one step may apply each remedy: an overflow is
// first compacted once, then shrunk up to three times (each halving the
// request when the window is unknown); a broken stream is sent again
// once.
var retryBudget = retries{compact: 1, shrink: 3, resend: 1}

// decideRetry picks the remedy for a reply that failed with f, given the
// remedies the step used so far. An overflow draws only on the compact and
// shrink budgets, a broken stream only on the resend budget. Every remedy
// but remedyNone is below its budget or ends the failure, so a step's
// retries end.
func decideRetry(f failure, used retries) remedy {
	switch f {
	case failOverflow:
		switch {
		case used.compact < retryBudget.compact:
			return remedyCompact
		case used.shrink < retryBudget.shrink:
			return remedyShrink
		}
		return remedyTooLong
	case failBroken:
		if used.resend < retryBudget.resend {
			return remedyResend
		}
	}
	return remedyNone
}

// failureOf classifies the reply of a step of t.
func failureOf(t *turnState, r *reply) failure {
	switch {
	case overflowed(t, r):
		return failOverflow
	case r.err != nil && errors.Is(r.err, model.ErrStreamBroken) && t.ctx.Err() == nil:
		return failBroken
	}
	return failNone
}

// retryReply applies the remedies decideRetry picks to the step's reply
// until it stands, and returns the reply with the request it answers.
// The returned error is a log write failure.
func (a *Agent) retryReply(t *turnState, step int, req model.Request, r *reply) (*reply, model.Request, error) {
	var used retries
	for {
		var err error
		switch decideRetry(failureOf(t, r), used) {
		case remedyNone:
			return r, req, nil
		case remedyCompact:
			used.compact++
			r, req, err = a.compactAndResend(t, step, req, r)
		case remedyShrink:
			used.shrink++
			r, req, err = a.shrinkAndResend(t, step, req, r)
		case remedyResend:
			used.resend++
			r, err = a.retryBroken(t, step, req, r)
		case remedyTooLong:
			r.err = &TooLongError{Tokens: budget.EstimateRequest(req), Window: a.window(req.Route)}
		}
		if err != nil {
			return r, req, err
		}
	}
}

// compactAndResend answers a refusal as too long: the window it states is
// learned, the view compacted and a request rebuilt from it sent, as
// another model call. When the compaction does not complete, r is
// returned as it was (its failure is cured otherwise).
func (a *Agent) compactAndResend(t *turnState, step int, req model.Request, r *reply) (*reply, model.Request, error) {
	a.learnWindow(req.Route, r.err)
	d, cerr := a.compactNow(t.ctx, session.TriggerOverflow, "")
	if d.Outcome != session.CompactionCompleted {
		a.log.Warn("compaction after context overflow did not complete", "outcome", d.Outcome, "err", cerr)
		return r, req, nil
	}
	call := a.stepCount
	a.stepCount++
	next, err := a.request(call)
	if err != nil {
		return r, req, err
	}
	r, err = a.stream(t, step, next)
	return r, next, err
}

// shrinkAndResend answers a refusal as too long that compaction did not
// cure: the request is fitted to the learned or known window (or,
// unknown, to half its size) and sent again. When nothing fits, the
// reply's error becomes a *TooLongError.
func (a *Agent) shrinkAndResend(t *turnState, step int, req model.Request, r *reply) (*reply, model.Request, error) {
	a.learnWindow(req.Route, r.err)
	est := budget.EstimateRequest(req)
	target := a.limit(req.Route)
	if target <= 0 || target >= est {
		target = est / 2
	}
	fitted, per, ok := compact.Fit(req, target)
	if !ok {
		r.err = &TooLongError{Tokens: est, Window: a.window(req.Route)}
		return r, req, nil
	}
	a.setElide(per)
	a.log.Warn("request cut to fit the context window", "tokens", est, "target", target, "per_text", per)
	// The refused call is recorded as a retried (empty, interrupted)
	// reply: the log shows the refusal, and a restart counts the call.
	r.route = req.Route
	if _, err := a.appendPartial(t, step, r); err != nil {
		return r, req, err
	}
	req = fitted
	req.Caller.Call = a.stepCount
	a.stepCount++
	r, err := a.stream(t, step, req)
	return r, req, err
}

// retryBroken handles a model call whose stream stalled or was cut
// (model.ErrStreamBroken): the partial reply is appended as interrupted
// and retried, so it stays in the log as it was shown but the view
// derived from the log leaves it out (session.History); the person sees a
// notice, recorded as session/notice so a replay shows it where it was
// shown live; and the request is sent once more, as another model call
// (Caller.Call), which a restart counts from the retried record. The
// returned error is a log write failure.
func (a *Agent) retryBroken(t *turnState, step int, req model.Request, broken *reply) (*reply, error) {
	broken.route = req.Route
	if _, err := a.appendPartial(t, step, broken); err != nil {
		return broken, err
	}
	if _, err := a.sess.Append(session.TypeNotice, session.NoticeData{
		Turn: t.num, Step: step, Kind: model.NoticeRetry, Attempt: 1,
		Message: "the answer broke off (" + broken.err.Error() + "); retrying without it",
	}, session.Ignorable()); err != nil {
		return broken, err
	}
	a.log.Warn("model answer broke off; retrying once", "chunks", len(broken.chunkSeqs), "err", broken.err)
	req.Caller.Call = a.stepCount
	a.stepCount++
	return a.stream(t, step, req)
}

// appendPartial records a broken reply that is retried: interrupted and
// marked retried, which keeps it out of the view.
func (a *Agent) appendPartial(t *turnState, step int, r *reply) (session.Event, error) {
	data := session.AssistantMessageData{
		Turn: t.num, Step: step,
		Message: session.Message{
			ID: a.sess.NewID(), Role: session.RoleAssistant,
			Content: r.Content(true),
			Source:  session.Source{Kind: session.SourceModel, Provider: r.route.Provider, Model: r.route.Model},
		},
		Usage:       r.Usage(),
		Interrupted: true,
		Retried:     true,
		Error:       errorInfo(r.err, CodeModelFailed),
	}
	opts := []session.AppendOption{session.WithSurface(session.AppendOp)}
	if len(r.chunkSeqs) > 0 {
		opts = append(opts, session.WithSources(r.chunkSeqs...))
	}
	return a.sess.Append(session.TypeAssistantMessage, data, opts...)
}

// retriedReply reports whether ev is an assistant/message recording a
// broken reply whose request was sent again (retryBroken), without
// decoding its content unless it may be one.
func retriedReply(ev session.Event) bool {
	if !bytes.Contains(ev.Data, []byte(`"retried":true`)) {
		return false
	}
	var d struct {
		Retried bool `json:"retried"`
	}
	return json.Unmarshal(ev.Data, &d) == nil && d.Retried
}
