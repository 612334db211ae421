package agent

// This file keeps a session whose newest turn alone does not fit the
// context window from being stuck: the window a provider's refusal states
// is learned and recorded (session/context-window, so a rebuilt session
// sizes its requests to it without another refusal); the middle of oversized texts (tool results, pasted prompt
// text) is cut from the model's view with a marked note (compact.Fit; the
// log keeps the full text); and when nothing fits the turn ends with
// CONTEXT_TOO_LONG saying so. The cut stays in force for later requests,
// so the next prompt starts from a view that fits.

import (
	"errors"
	"fmt"
	"maps"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// window is the context window of route r: the budget's, else one a
// provider's refusal stated, else 0.
func (a *Agent) window(r model.Route) int {
	if w := a.opts.Budget.WindowFor(r); w > 0 {
		return w
	}
	return a.learned[r]
}

// limit is how many tokens a request may hold before compaction.
func (a *Agent) limit(r model.Route) int {
	if l := a.opts.Budget.Limit(r); l > 0 {
		return l
	}
	if w := a.learned[r]; w > 0 {
		return int(float64(w) * budget.DefaultThreshold)
	}
	return 0
}

// learnWindow keeps the window a context-length refusal of a request to
// route r stated, when the budget knows none for r, and records it
// (session/context-window) so a rebuilt session starts from it. The
// record reaches the disk with the next checkpoint; a failure to append
// it is logged and the window is still used in memory.
func (a *Agent) learnWindow(r model.Route, err error) {
	w := compact.WindowFromError(err)
	if w <= 0 || a.opts.Budget.WindowFor(r) > 0 || a.learned[r] == w {
		return
	}
	a.setLearned(r, w)
	a.log.Info("context window learned from the provider", "window", w, "provider", r.Provider, "model", r.Model)
	// Ignorable: a build that predates the record reads the log without it.
	if _, err := a.sess.Append(session.TypeContextWindow, session.ContextWindowData{Provider: r.Provider, Model: r.Model, Window: w}, session.Ignorable()); err != nil {
		a.log.Warn("record the learned context window failed", "err", err)
	}
}

// loadWindows restores the windows learned before (session/context-window
// records of the whole log: a fork inherits its parent's), the last one
// of each route winning.
func (a *Agent) loadWindows(events []session.Event) {
	for _, ev := range events {
		if ev.Type != session.TypeContextWindow {
			continue
		}
		d, err := session.DecodeData[session.ContextWindowData](ev)
		if err != nil || d.Window <= 0 {
			a.log.Warn("recorded context window unreadable; ignored", "seq", ev.Seq, "err", err)
			continue
		}
		a.setLearned(model.Route{Provider: d.Provider, Model: d.Model}, d.Window)
	}
}

func (a *Agent) setLearned(r model.Route, w int) {
	a.learnedMu.Lock()
	defer a.learnedMu.Unlock()
	if a.learned == nil {
		a.learned = map[model.Route]int{}
	}
	a.learned[r] = w
}

// LearnedWindows returns a copy of the context windows learned so far,
// per route: from providers' refusals in this process and from the log's
// session/context-window records. A display that does not replay the log
// (session/resume) starts from it.
func (a *Agent) LearnedWindows() map[model.Route]int {
	a.learnedMu.Lock()
	defer a.learnedMu.Unlock()
	return maps.Clone(a.learned)
}

// overflowed reports a context-length refusal before any output.
func overflowed(t *turnState, r *reply) bool {
	return r.err != nil && !r.streamed() && errors.Is(r.err, model.ErrContextLength) && t.ctx.Err() == nil
}

// TooLongError ends a turn whose newest part does not fit the context
// window even with its long texts cut.
type TooLongError struct {
	Tokens, Window int
}

func (e *TooLongError) Error() string {
	w := "the model's context window"
	if e.Window > 0 {
		w = fmt.Sprintf("the model's context window (%d tokens)", e.Window)
	}
	return fmt.Sprintf("the conversation does not fit %s even with the middle of its long texts cut (about %d tokens remain); the next prompt starts from what fits: shorten it, or start a new session", w, e.Tokens)
}

// Code implements the coded-error convention of errorInfo.
func (e *TooLongError) Code() string { return CodeContextTooLong }

// fitNewest cuts oversized texts from req when the window is known and
// req would not fit it (after any compaction).
func (a *Agent) fitNewest(t *turnState, req model.Request) (model.Request, error) {
	w := a.window(req.Route)
	if w <= 0 || budget.EstimateRequest(req) <= w {
		return req, nil
	}
	fitted, per, ok := compact.Fit(req, a.limitOr(req.Route, w))
	if !ok {
		return req, &TooLongError{Tokens: budget.EstimateRequest(req), Window: w}
	}
	a.setElide(per)
	return fitted, nil
}

func (a *Agent) limitOr(r model.Route, w int) int {
	if l := a.limit(r); l > 0 {
		return l
	}
	return w
}

func (a *Agent) setElide(per int) {
	if per > 0 && (a.elidePer == 0 || per < a.elidePer) {
		a.elidePer = per
	}
}
