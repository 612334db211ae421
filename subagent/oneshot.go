package subagent

// This file defines Run, the handle of a one-shot child, and the stop-reason
// folds over a child's log (subagent-contract.md §2.2 step 6 and §2.8).

import (
	"context"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Result is the outcome of a one-shot run.
type Result struct {
	Output     []session.Block
	StopReason string
	Diagnostic string
}

// Run is a published one-shot child. Result waits for its outcome; Dispose
// (idempotent) cancels it, waits for it and releases the child.
type Run struct {
	// ID is the child session id.
	ID string
	// LocalAgent is the child agent when it runs in this process.
	LocalAgent *agent.Agent
	// Depth is the child's delegation depth.
	Depth int

	dispose func(ctx context.Context) error

	mu        sync.Mutex
	done      chan struct{}
	settled   bool
	res       Result
	err       error
	observers []func(Result, error)

	disposeOnce sync.Once
	disposeErr  error
}

// NewRun returns an unsettled run. dispose is called once by Dispose; it
// must leave the run settled (call Settle) before returning.
func NewRun(id string, local *agent.Agent, depth int, dispose func(ctx context.Context) error) *Run {
	return &Run{ID: id, LocalAgent: local, Depth: depth, dispose: dispose, done: make(chan struct{})}
}

// Settle records the run's outcome: a result, or an infrastructure error.
// Only the first call counts. Observers run synchronously.
func (r *Run) Settle(res Result, err error) {
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return
	}
	r.settled, r.res, r.err = true, res, err
	obs := r.observers
	r.observers = nil
	close(r.done)
	r.mu.Unlock()
	for _, fn := range obs {
		fn(res, err)
	}
}

// observe calls fn once the run settles (immediately if it has).
func (r *Run) observe(fn func(Result, error)) {
	r.mu.Lock()
	if !r.settled {
		r.observers = append(r.observers, fn)
		r.mu.Unlock()
		return
	}
	res, err := r.res, r.err
	r.mu.Unlock()
	fn(res, err)
}

// Done is closed when the run has settled.
func (r *Run) Done() <-chan struct{} { return r.done }

// Result waits for the outcome. The error is an infrastructure failure of
// the run (child-level failures are stop reasons), or ctx's error.
func (r *Run) Result(ctx context.Context) (Result, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res, r.err
}

// Dispose cancels the child if it still runs, waits for it and releases
// it. It is idempotent; it fails only if releasing the child failed.
func (r *Run) Dispose(ctx context.Context) error {
	r.disposeOnce.Do(func() {
		if r.dispose != nil {
			r.disposeErr = r.dispose(ctx)
		}
		// A provider that forgot to settle must not leave waiters hanging.
		r.Settle(Result{StopReason: StopAborted}, nil)
	})
	return r.disposeErr
}

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
	case session.TurnEndBlocked, session.TurnEndAborted, session.TurnEndInterrupted, session.TurnEndError:
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
		}
	}
	if cancelled && stop != StopCompleted {
		stop = StopAborted
	}
	return stop
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
	case session.TurnEndCompleted:
		if dropped {
			return StopAborted
		}
		return StopCompleted
	}
	return StopError
}
