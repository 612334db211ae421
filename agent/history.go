package agent

// This file builds a step's model request from the model-visible history,
// which it derives from the log and caches between steps.

import (
	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// request builds the model request of the current step.
func (a *Agent) request(call int) (model.Request, error) {
	msgs, err := a.history()
	if err != nil {
		return model.Request{}, err
	}
	if a.elidePer > 0 {
		msgs, _ = compact.Elide(msgs, a.elidePer)
	}
	return model.Request{
		Caller:    model.Caller{SessionID: a.sess.ID(), ScriptKey: a.opts.ScriptKey, Call: call},
		Route:     a.CurrentRoute(),
		System:    a.system.text,
		Messages:  msgs,
		Tools:     a.opts.Tools.Specs(),
		MaxTokens: a.opts.MaxTokens,
		// Per request, as the route: the provider decides what a
		// switch in the middle of a turn can change (anthropic).
		NoThinking: a.opts.NoThinking != nil && a.opts.NoThinking(),
		Notify:     a.publishNotice,
	}, nil
}

// hist caches the model-visible history derived from the log. Appends
// extend it; a replace op (compaction) forces a full recomputation.
type hist struct {
	next int // seq of the first event not yet folded in
	msgs []session.SurfaceMessage
}

func (a *Agent) history() ([]model.Message, error) {
	if a.initErr != nil {
		return nil, a.initErr
	}
	evs, err := a.sess.EventsFrom(a.hist.next)
	if err != nil {
		return nil, err
	}
	replace := false
	for _, ev := range evs {
		// A compaction folds into the cached view (session.Extend); only a
		// surface replace op needs the whole log.
		if ev.SurfaceOp != nil && ev.SurfaceOp.Replace {
			replace = true
			break
		}
	}
	if replace {
		all, err := a.sess.Events()
		if err != nil {
			return nil, err
		}
		h, err := session.History(all)
		if err != nil {
			return nil, err
		}
		a.hist = hist{next: len(all), msgs: h}
	} else if len(evs) > 0 {
		h, err := session.Extend(a.hist.msgs, evs)
		if err != nil {
			return nil, err
		}
		a.hist.msgs = h
		a.hist.next = int(evs[len(evs)-1].Seq) + 1
	}
	return model.FromSurface(a.hist.msgs), nil
}
