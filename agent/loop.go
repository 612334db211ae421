package agent

// This file defines the turn loop: turns made of steps (pre-step hooks, one
// model call, the tools it asked for), recorded on the session in the order
// of reference-scenarios.md §d "Common parent prefix".

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
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
			a.mu.Lock()
			pending := len(a.nextStep) > 0
			a.mu.Unlock()
			if !pending || out.reason.Kind != session.TurnEndCompleted || t.ctx.Err() != nil {
				return out.reason
			}
		}
	}
}

// runStep runs one open step: delivers messages, runs hooks, calls the
// model and the tools it asked for.
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
	if overflowed(t, reply) {
		// The provider counted more than we estimated: compact once and
		// retry the request once.
		a.learnWindow(req.Route, reply.err)
		d, cerr := a.compactNow(t.ctx, session.TriggerOverflow, "")
		if d.Outcome == session.CompactionCompleted {
			call = a.stepCount
			a.stepCount++
			if req, err = a.request(call); err != nil {
				return failed(t, err, CodeSessionWrite)
			}
			if reply, err = a.stream(t, step, req); err != nil {
				return failed(t, err, CodeSessionWrite)
			}
		} else {
			a.log.Warn("compaction after context overflow did not complete", "outcome", d.Outcome, "err", cerr)
		}
	}
	if reply, err = a.shrinkAndRetry(t, step, req, reply); err != nil {
		return failed(t, err, CodeSessionWrite)
	}
	reply.route = req.Route
	if reply.err != nil && errors.Is(reply.err, model.ErrStreamBroken) && t.ctx.Err() == nil {
		// The stream stalled or was cut: keep what was shown, recorded as
		// interrupted and out of the model's view, and ask once more.
		if reply, err = a.retryBroken(t, step, req, reply); err != nil {
			return failed(t, err, CodeSessionWrite)
		}
		reply.route = req.Route
	}
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
			Content: r.content(true),
			Source:  session.Source{Kind: session.SourceModel, Provider: r.route.Provider, Model: r.route.Model},
		},
		Usage:       r.usage,
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

// runCalls runs the tool calls of a complete reply (or records them not
// started when the reply was cut off) and says how the step ends.
func (a *Agent) runCalls(t *turnState, step int, rep *reply) stepOutcome {
	finish := rep.finishReason()
	switch finish {
	case model.FinishLength, model.FinishContentFilter:
		// The reply was cut off: its tool calls are not run, but each
		// gets a result so the history stays well formed.
		for _, c := range rep.calls {
			res := tool.ErrorResult(&tool.Error{Code: tool.CodeToolNotStarted, Message: "tool call not started: the reply was cut off (finish " + finish + ")"})
			if err := a.recordCall(t, step, c, func() tool.Result { return res }); err != nil {
				return failed(t, err, callFailureCode(err))
			}
		}
		if finish == model.FinishLength {
			return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndMaxTokens}}
		}
		return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndBlocked}}
	}

	for _, c := range rep.calls {
		if err := a.recordCall(t, step, c, func() tool.Result { return a.execute(t, c) }); err != nil {
			return failed(t, err, callFailureCode(err))
		}
	}
	if t.ctx.Err() != nil {
		return stepOutcome{reason: abortedReason(t)}
	}
	if len(rep.calls) > 0 {
		return stepOutcome{again: true}
	}
	return stepOutcome{reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}
}

// recordCall appends tool/call, makes it durable (write-ahead: see the
// package doc), obtains the result and appends tool/result. If the
// checkpoint fails the tool is not run: the call gets a TOOL_NOT_STARTED
// result and recordCall returns a *checkpointError.
func (a *Agent) recordCall(t *turnState, step int, c *toolCall, run func() tool.Result) error {
	callEv, err := a.sess.Append(session.TypeToolCall, session.ToolCallData{
		Turn: t.num, Step: step, CallID: c.id, Name: c.name, Arguments: c.args.String(),
	})
	if err != nil {
		return err
	}
	// Not cancelled with the turn: a cancelled call still runs (and sees the
	// cancellation itself), as before, and its record must be durable first.
	var cpErr error
	if cpErr = a.syncTo(context.WithoutCancel(t.ctx), callEv.Seq); cpErr != nil {
		res := tool.ErrorResult(&tool.Error{Code: tool.CodeToolNotStarted, Message: "tool call not started: the session log could not be made durable"})
		run = func() tool.Result { return res }
	} else if a.opts.Journal != nil {
		if err := a.opts.Journal.Shown(t.ctx, a.sess.ID(), callEv.Seq); err != nil {
			a.log.Debug("tool call not shown before running", "call_id", c.id, "err", err)
		}
	}
	res := run()
	content := res.Content
	if content == nil {
		content = []session.Block{}
	}
	data := session.ToolResultData{
		Turn: t.num, Step: step,
		Message: session.Message{
			ID: a.sess.NewID(), Role: session.RoleUser,
			Source: session.Source{Kind: session.SourceTool, CallID: c.id},
			Content: []session.Block{{
				Type: session.BlockToolResult, ToolCallID: c.id, Content: content, IsError: res.IsError,
			}},
		},
		Error:   res.Error,
		Raw:     res.Raw,
		Display: res.Display,
	}
	if data.Raw != nil {
		if _, err := json.Marshal(data.Raw); err != nil {
			a.log.Warn("tool raw output is not serializable; dropped", "tool", c.name, "err", err)
			data.Raw = nil
		}
	}
	_, err = a.sess.Append(session.TypeToolResult, data,
		session.WithSurface(session.AppendOp), session.WithSources(callEv.Seq))
	if err == nil && cpErr != nil {
		err = &checkpointError{cpErr}
	}
	return err
}

// callFailureCode is the turn's error code when recordCall fails.
func callFailureCode(err error) string {
	var ce *checkpointError
	if errors.As(err, &ce) {
		return CodeCheckpointFailed
	}
	return CodeSessionWrite
}

// checkpointError is a failed write-ahead checkpoint before a tool call.
type checkpointError struct{ err error }

func (e *checkpointError) Error() string { return "checkpoint before tool call: " + e.err.Error() }
func (e *checkpointError) Unwrap() error { return e.err }

// execute runs one tool call through the registry, forwarding progress to
// subscribers until the call returns.
func (a *Agent) execute(t *turnState, c *toolCall) tool.Result {
	var mu sync.Mutex
	done := false
	inv := tool.Invocation{
		CallID:    c.id,
		Name:      c.name,
		Arguments: json.RawMessage(c.args.String()),
		Caller:    a,
		Progress: func(p tool.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				a.publishProgress(c.id, p)
			}
		},
	}
	res := a.opts.Tools.Execute(t.ctx, inv)
	mu.Lock()
	done = true
	mu.Unlock()
	return res
}

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
		Notify:    a.publishNotice,
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

// toolCall accumulates one streamed tool call.
type toolCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// reply accumulates one streamed model reply.
type reply struct {
	text, reasoning strings.Builder
	// thoughts are the closed reasoning blocks (signed or redacted) before
	// the open one in reasoning/sig.
	thoughts  []session.Block
	sig       string
	calls     []*toolCall
	usage     *session.Usage
	finish    string
	chunkSeqs []int64
	err       error       // the stream's error, if it failed
	route     model.Route // the route the request was sent with
}

func (r *reply) streamed() bool { return len(r.chunkSeqs) > 0 }

func (r *reply) add(c session.Chunk) {
	switch c.Type {
	case session.ChunkText:
		r.text.WriteString(c.Text)
	case session.ChunkReasoning:
		r.addReasoning(c)
	case session.ChunkToolCall:
		var tc *toolCall
		for _, x := range r.calls {
			if x.index == c.Index {
				tc = x
				break
			}
		}
		if tc == nil {
			tc = &toolCall{index: c.Index}
			r.calls = append(r.calls, tc)
		}
		if c.ID != "" {
			tc.id = c.ID
		}
		if c.Name != "" {
			tc.name = c.Name
		}
		tc.args.WriteString(c.Arguments)
	case session.ChunkUsage:
		if c.Usage != nil {
			u := *c.Usage
			r.usage = &u
		}
	case session.ChunkFinish:
		r.finish = c.Finish
	}
	if c.Usage != nil && c.Type != session.ChunkUsage {
		u := *c.Usage
		r.usage = &u
	}
}

func (r *reply) finishReason() string {
	if r.finish != "" {
		return r.finish
	}
	if len(r.calls) > 0 {
		return model.FinishToolCalls
	}
	return model.FinishStop
}

// content renders the reply as message blocks: reasoning, text, tool
// calls. An interrupted reply keeps only reasoning and text: its tool calls
// were never dispatched and may be incomplete.
func (r *reply) content(interrupted bool) []session.Block {
	out := make([]session.Block, 0, 2+len(r.calls)+len(r.thoughts))
	out = append(out, r.thoughts...)
	if r.reasoning.Len() > 0 || r.sig != "" {
		out = append(out, session.Block{Type: session.BlockReasoning, Text: r.reasoning.String(), Signature: r.sig})
	}
	if r.text.Len() > 0 {
		out = append(out, session.Text(r.text.String()))
	}
	if !interrupted {
		for _, c := range r.calls {
			out = append(out, session.Block{Type: session.BlockToolCall, ID: c.id, Name: c.name, Arguments: c.args.String()})
		}
	}
	return out
}

// stream runs the model call of a step, appending every chunk as
// assistant/chunk. The returned error is a log write failure; the model's
// own failure is in reply.err.
func (a *Agent) stream(t *turnState, step int, req model.Request) (*reply, error) {
	r := &reply{}
	for c, err := range a.opts.Model.Stream(t.ctx, req) {
		if err != nil {
			r.err = err
			break
		}
		ev, aerr := a.sess.Append(session.TypeAssistantChunk, session.AssistantChunkData{Turn: t.num, Step: step, Chunk: c})
		if aerr != nil {
			return r, aerr
		}
		r.chunkSeqs = append(r.chunkSeqs, ev.Seq)
		r.add(c)
		if t.ctx.Err() != nil {
			break
		}
		if err := a.writeErr(); err != nil {
			// Nothing more of this answer can be saved, so none of it is
			// shown: stop the model rather than stream unseen.
			a.log.Error("answer stopped: the session log cannot be written", "err", err)
			return r, err
		}
	}
	for _, c := range r.calls {
		if c.id == "" {
			c.id = a.sess.NewID()
		}
	}
	return r, nil
}

func (a *Agent) appendAssistant(t *turnState, step int, r *reply, interrupted bool) (session.Event, error) {
	data := session.AssistantMessageData{
		Turn: t.num, Step: step,
		Message: session.Message{
			ID: a.sess.NewID(), Role: session.RoleAssistant,
			Content: r.content(interrupted),
			Source:  session.Source{Kind: session.SourceModel, Provider: r.route.Provider, Model: r.route.Model},
		},
		Usage:       r.usage,
		Interrupted: interrupted,
	}
	if !interrupted {
		data.Finish = r.finishReason()
	}
	opts := []session.AppendOption{session.WithSurface(session.AppendOp)}
	if len(r.chunkSeqs) > 0 {
		opts = append(opts, session.WithSources(r.chunkSeqs...))
	}
	return a.sess.Append(session.TypeAssistantMessage, data, opts...)
}

// Title limits (reference-scenarios.md §d item 4).
const (
	titleWords    = 5
	titleMaxBytes = 40
)

// FallbackTitle returns the first five words of the text blocks in
// content, dropping trailing words (or, for one long word, bytes at a rune
// boundary) until it fits in 40 bytes.
func FallbackTitle(content []session.Block) string {
	words := strings.Fields(session.JoinText(content, " "))
	if len(words) > titleWords {
		words = words[:titleWords]
	}
	for len(words) > 1 && len(strings.Join(words, " ")) > titleMaxBytes {
		words = words[:len(words)-1]
	}
	title := strings.Join(words, " ")
	for len(title) > titleMaxBytes {
		_, size := utf8.DecodeLastRuneInString(title)
		title = title[:len(title)-size]
	}
	return title
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
