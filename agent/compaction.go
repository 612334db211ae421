package agent

// This file runs compactions (policy in package compact, the record in
// session/compaction): automatically before a request that would pass the
// threshold, after a context_length_exceeded answer (once per step, then
// the request is retried), and on demand (Compact, the /compact command),
// which runs as a turn of its own so the loop stays the only writer.
//
// The event is appended and made durable before any request uses it. A
// cancelled or failed compaction is recorded too, and leaves the view as
// it was.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// NoticeCompaction is the model.Notice kind published when a compaction
// starts; its Message is the compaction id. The session/compaction event
// ends it.
const NoticeCompaction = "compaction"

// CompactScriptSuffix is appended to the session's script key for summary
// requests, so a scripted model answers them from their own list and the
// turns' call indexes are unchanged.
const CompactScriptSuffix = "/compact"

// ErrNothingToCompact is returned by Compact for a history too short to
// compact.
var ErrNothingToCompact = errors.New("nothing to compact yet")

// ErrWouldNotShrink is the cause of a compaction that was not applied
// because its result would be no smaller than the context it replaces.
var ErrWouldNotShrink = errors.New("the compacted context would not be smaller")

// compactReq is a queued Compact call.
type compactReq struct {
	instructions string
	waiter       chan compactDone // buffered 1
}

type compactDone struct {
	data session.CompactionData
	err  error
}

// Compact summarizes the conversation now (the /compact command), with the
// person's optional instructions for the summary. It waits for the
// compaction, which runs as a turn after the work queued before it; a
// cancel (Cancel, or ctx) leaves the old context in force. The returned
// data says how it ended (Outcome); err is non-nil when it did not
// complete.
func (a *Agent) Compact(ctx context.Context, instructions string) (session.CompactionData, error) {
	r := &compactReq{instructions: instructions, waiter: make(chan compactDone, 1)}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return session.CompactionData{}, errors.New("agent: closed")
	}
	a.compactQ = append(a.compactQ, r)
	a.wakeLocked()
	a.mu.Unlock()
	select {
	case d := <-r.waiter:
		return d.data, d.err
	case <-ctx.Done():
	}
	a.mu.Lock()
	for i, x := range a.compactQ {
		if x == r {
			a.compactQ = append(a.compactQ[:i:i], a.compactQ[i+1:]...)
			a.mu.Unlock()
			return session.CompactionData{Outcome: session.CompactionCancelled}, context.Cause(ctx)
		}
	}
	if a.turn != nil && a.turn.compact == r {
		a.turn.cancel(&AbortError{Reason: session.AbortReason{Kind: AbortUser}})
	}
	a.mu.Unlock()
	d := <-r.waiter
	return d.data, d.err
}

// runCompactTurn runs the compaction of a Compact turn. Its outcome goes
// to the waiting Compact once the turn has ended (runTurn), as a prompt's
// does: a caller that prompts next must find the turn/end logged, or the
// next prompt's splice races it into the log.
func (a *Agent) runCompactTurn(t *turnState) session.TurnEndReason {
	d, err := a.compactNow(t.ctx, session.TriggerManual, t.compact.instructions)
	t.compactDone = compactDone{data: d, err: err}
	if t.ctx.Err() != nil {
		return abortedReason(t)
	}
	return session.TurnEndReason{Kind: session.TurnEndCompleted}
}

// maybeCompact compacts before req when it would pass the threshold. It
// returns whether the view changed (the request must be rebuilt).
// A compaction that did not complete is not tried again in the same turn
// (each try would be another summary request); the request goes out as
// it is and the provider decides.
func (a *Agent) maybeCompact(t *turnState, req model.Request) bool {
	limit := a.limit(req.Route)
	if t.compactFailed || limit <= 0 {
		return false
	}
	est := budget.EstimateRequest(req)
	shift := 0
	if a.opts.EstimateTokens != nil {
		shift = a.opts.EstimateTokens(req.Caller, est) - est
	}
	if est+shift <= limit {
		return false
	}
	a.estShift = shift
	d, err := a.compactNow(t.ctx, session.TriggerAuto, "")
	a.estShift = 0
	if err != nil {
		t.compactFailed = true
		a.log.Warn("automatic compaction did not complete", "outcome", d.Outcome, "err", err)
	}
	return d.Outcome == session.CompactionCompleted
}

// compactNow compacts the current view and records the outcome. It runs
// on the loop goroutine.
// It is long because every way out records the outcome through one
// closure over the same start time and data (record), so the completed,
// cancelled, failed and would-not-shrink paths stay side by side.
func (a *Agent) compactNow(ctx context.Context, trigger, instructions string) (session.CompactionData, error) {
	start := a.sess.Now() // the session's clock: scenario runs are deterministic
	if _, err := a.history(); err != nil {
		return session.CompactionData{}, err
	}
	hist := a.hist.msgs
	base, err := a.request(a.stepCount)
	if err != nil {
		return session.CompactionData{}, err
	}
	window := a.window(base.Route)
	// The shift of a replayed estimate lies in the system prompt and the
	// tools (what differs from the recorded run): the fixed part.
	fixed := budget.EstimateRequest(model.Request{System: base.System, Tools: base.Tools}) + a.estShift
	d := session.CompactionData{
		ID: a.sess.NewID(), Trigger: trigger, Instructions: instructions,
		PreTokens: budget.EstimateRequest(base) + a.estShift,
	}
	record := func(outcome string, cause error) (session.CompactionData, error) {
		d.Outcome = outcome
		d.DurationMs = max(a.sess.Now()-start, 0)
		if cause != nil {
			d.Error = cause.Error()
		}
		ev, err := a.sess.Append(session.TypeCompaction, d)
		if err != nil {
			return d, err
		}
		a.ownCompactions++
		// Durable before any request uses it: a restart must see the same
		// view the next request is built from.
		if err := a.syncTo(context.WithoutCancel(ctx), ev.Seq); err != nil {
			return d, err
		}
		if a.opts.AfterCompaction != nil {
			a.opts.AfterCompaction(ev)
		}
		return d, cause
	}

	// Phase one: stub old tool results, when that is enough (only for the
	// automatic trigger: /compact asks for a summary, and after an overflow
	// the provider has shown our estimate to be short).
	if trigger == session.TriggerAuto && window > 0 {
		if upTo, post, ok := compact.StubEnough(hist, fixed, int(float64(window)*compact.Target)); ok {
			d.StubUpTo, d.PostTokens = upTo, post
			return record(session.CompactionCompleted, nil)
		}
	}
	// Phase two: a model-written summary of everything before the kept turns.
	keep := int(float64(window) * compact.KeepFraction)
	if trigger == session.TriggerOverflow {
		keep = 0 // our estimate fell short: keep only the newest turn
	}
	plan, ok := compact.Cut(hist, keep, trigger == session.TriggerManual)
	if !ok {
		return d, ErrNothingToCompact
	}
	// Durable before it is shown: a crash from here on leaves the start
	// open, and the repair closes it as a failed compaction, so a client
	// that saw it sees it again on replay (closed) and the view is as it
	// was (session.InterruptedCompaction).
	started, err := a.sess.Append(session.TypeCompactionStart, session.CompactionStartData{
		ID: d.ID, Trigger: trigger, PreTokens: d.PreTokens, Instructions: instructions,
	}, session.Ignorable())
	if err != nil {
		return d, err
	}
	if err := a.syncTo(context.WithoutCancel(ctx), started.Seq); err != nil {
		return d, err
	}
	a.publishNotice(model.Notice{Kind: NoticeCompaction, Message: d.ID})
	// The summary call's index counts this session's own compactions (not
	// a fork's inherited ones), so it survives restarts like Caller.Call.
	calls := a.ownCompactions
	req := compact.Request(base, plan.Covered, instructions, int(float64(window)*compact.Target))
	req.Caller.ScriptKey, req.Caller.Call, req.Notify = a.scriptKey()+CompactScriptSuffix, calls, a.publishNotice
	var text strings.Builder
	var serr error
	for c, err := range a.opts.Model.Stream(ctx, req) {
		if err != nil {
			serr = err
			break
		}
		if c.Type == session.ChunkText {
			text.WriteString(c.Text)
		}
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case ctx.Err() != nil:
		return record(session.CompactionCancelled, fmt.Errorf("compaction cancelled: %w", context.Cause(ctx)))
	case serr != nil:
		return record(session.CompactionFailed, fmt.Errorf("the summary request failed: %w", serr))
	case strings.TrimSpace(text.String()) == "":
		return record(session.CompactionFailed, errors.New("the model returned an empty summary"))
	}
	summary := strings.TrimSpace(text.String())
	post := fixed + budget.EstimateText(session.SummaryPrefix+summary) + budget.EstimateMessages(model.FromSurface(plan.Keep))
	if post >= d.PreTokens {
		// Honest: a summary as long as what it replaces would only lose
		// detail. The view stays as it was and the person is told why.
		d.PostTokens = d.PreTokens
		return record(session.CompactionFailed, fmt.Errorf("%w: the summary would leave %d tokens where the conversation now takes %d; it was left as it was", ErrWouldNotShrink, post, d.PreTokens))
	}
	d.Summary, d.UpTo, d.PostTokens = summary, plan.UpTo, post
	return record(session.CompactionCompleted, nil)
}

func (a *Agent) scriptKey() string { return a.opts.ScriptKey }

// overflowRetry reports whether ev is a completed overflow compaction,
// after which the step's request was sent again: that retry counts as a
// model call (Caller.Call), here and after a restart alike.
func overflowRetry(ev session.Event) bool {
	d, err := session.DecodeData[session.CompactionData](ev)
	return err == nil && d.Trigger == session.TriggerOverflow && d.Outcome == session.CompactionCompleted
}
