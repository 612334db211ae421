package agent

// This file defines Agent: its construction, accessors, lifecycle (Close,
// WaitIdle) and subscriptions. The inbox lives in inbox.go, the turn loop in
// loop.go.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Agent runs turns on one live session. It is safe for concurrent use.
//
// An Agent owns at most one loop goroutine, started when runnable work
// arrives and exiting when there is none left; Close waits for it.
type Agent struct {
	sess *session.Session
	opts Options
	log  *slog.Logger

	// life is cancelled by Close (cause {kind:"disposed"}); every turn
	// context derives from it.
	life       context.Context
	lifeCancel context.CancelCauseFunc

	status  atomic.Value // Status, readable without mu (subscribers may call Status)
	parkedN atomic.Int64 // mirror of parkedCountLocked for ParkedCount
	entered atomic.Bool  // some pre-step chain returned Enter (StepInfo.FirstEnter)
	// estShift is what Options.EstimateTokens added to the estimate of the
	// automatic compaction running now (loop goroutine only).
	estShift int

	mu sync.Mutex // guards the fields below; held while inbox splices are appended
	// nextTurn holds followups and injected messages (target "next-turn");
	// nextStep holds steering messages (target "next-step").
	nextTurn []*item
	nextStep []*item
	parked   bool          // unclaimed items wait for a waking send
	closed   bool          // Close was called
	turn     *turnState    // the open turn, nil between turns
	compactQ []*compactReq // queued Compact calls (compaction.go)
	looping  bool          // a loop goroutine exists
	loopDone chan struct{}
	// idle is closed while the agent is quiescent and its OnIdle callback
	// has returned; a fresh channel replaces it when work arrives.
	idle       chan struct{}
	idleClosed bool

	closeOnce sync.Once  // runs Options.OnClose
	subMu     sync.Mutex // guards subs
	subs      []*subscriber

	// Loop-goroutine state. Loop goroutines run one after another and hand
	// over through mu, so these need no lock of their own.
	lastTurn  int  // highest turn number in the log
	ownTurns  int  // turn/start events in the own suffix (after the seed)
	stepCount int  // step/start events in the own suffix: the next Caller.Call
	hist      hist // cached model-visible history
	// ownCompactions counts session/compaction events in the own suffix:
	// the next summary request's Caller.Call.
	ownCompactions int
	system         systemState
	// learned holds, per route, the context window a provider's refusal
	// stated (used when the budget knows none), restored from the log's
	// session/context-window records; elidePer, when > 0, is the
	// per-text limit (estimated tokens) at which the model's view cuts
	// the middle of oversized texts, set when the newest turn alone did
	// not fit (overflow.go). elidePer is not logged: after a restart the
	// first request that does not fit the (learned) window sets it again.
	learned  map[model.Route]int
	elidePer int
	// learnedMu guards writes to learned (loop goroutine) against
	// LearnedWindows, which any goroutine may call.
	learnedMu sync.Mutex
	// initErr is a failure to read the log at construction; every model
	// request fails with it.
	initErr error
	// prepared is closed when the Options.PrepareSystem goroutine New
	// started has returned (nil when none was started); Close waits for it.
	prepared chan struct{}
}

// item is one inbox entry.
type item struct {
	msg    session.Message
	wake   bool            // false for Inject: recorded, does not start a turn
	waiter chan TurnResult // Prompt's result channel (buffered 1), or nil
	turn   *turnState      // the turn that claimed it
}

// New returns an agent for s. The loop runs only while there is work;
// the one goroutine New starts is Options.PrepareSystem's, when the log
// records no system prompt yet, and Close cancels and waits for it. The
// caller keeps owning s; Close does not remove it from its store.
func New(s *session.Session, opts Options) *Agent {
	if opts.ScriptKey == "" {
		opts.ScriptKey = "main"
	}
	if opts.MaxSteps <= 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{sess: s, opts: opts}
	a.log = opts.Logger.With("session_id", s.ID())
	a.life, a.lifeCancel = context.WithCancelCause(context.Background())
	a.status.Store(StatusIdle)
	a.idle = make(chan struct{})
	close(a.idle)
	a.idleClosed = true

	events, err := s.EventsView() // read only
	if err != nil {
		// The log's evicted part cannot be read back: the agent's turns fail
		// with the cause (history) rather than run on a partial view.
		a.initErr = err
		a.log.Error("read the session log", "err", err)
	}
	a.lastTurn = session.LastTurn(events)
	seed := min(max(s.Header().SeedLength, 0), len(events))
	a.loadSystem(events[seed:])
	a.startPrepare()
	a.loadWindows(events)
	for _, ev := range events[seed:] {
		switch ev.Type {
		case session.TypeTurnStart:
			a.ownTurns++
		case session.TypeStepStart:
			a.stepCount++
		case session.TypeAssistantMessage:
			if retriedReply(ev) {
				a.stepCount++ // the request was sent again: another model call
			}
		case session.TypeCompaction:
			a.ownCompactions++
			if overflowRetry(ev) {
				a.stepCount++ // the retried request was a model call too
			}
		}
	}
	return a
}

// ID returns the agent's id, which is its session's id.
func (a *Agent) ID() string { return a.sess.ID() }

// SessionID returns the id of the agent's session (tool.Caller).
func (a *Agent) SessionID() string { return a.sess.ID() }

var _ tool.Caller = (*Agent)(nil)

// Session returns the agent's session.
func (a *Agent) Session() *session.Session { return a.sess }

// Options returns the options the agent was built with (defaults applied).
func (a *Agent) Options() Options { return a.opts }

// Tools returns the agent's tool registry (possibly nil).
func (a *Agent) Tools() *tool.Registry { return a.opts.Tools }

// Model returns the agent's model (possibly nil).
func (a *Agent) Model() model.Model { return a.opts.Model }

// Status reports "running" while a turn is open or runnable work is
// queued, else "idle". It takes no lock, so subscribers may call it.
func (a *Agent) Status() Status { return a.status.Load().(Status) }

// ParkedCount returns the number of inbox items parked by
// Cancel(keepInbox=true) and not yet woken. It takes no lock.
func (a *Agent) ParkedCount() int { return int(a.parkedN.Load()) }

// WaitIdle blocks until the agent is idle (no open turn, no runnable
// inbox item) and its OnIdle callback for that moment has returned, or ctx
// is done.
func (a *Agent) WaitIdle(ctx context.Context) error {
	a.mu.Lock()
	ch := a.idle
	a.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close disposes of the agent: it drops unclaimed inbox items (recorded as
// canceled splices), cancels the open turn with cause {kind:"disposed"},
// waits for the loop goroutine (and a PrepareSystem still running) and
// ends all subscriptions. Later inbox calls fail with ErrClosed. Close is
// idempotent; it returns ctx's error if ctx ends before those goroutines
// exit. Close must not be called from
// the agent's own loop goroutine (OnIdle, a hook or a tool of the agent).
func (a *Agent) Close(ctx context.Context) error {
	cause := session.AbortReason{Kind: AbortDisposed}
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		a.dropLocked(cause)
		if a.turn != nil {
			a.turn.cancel(&AbortError{Reason: cause})
		}
		a.lifeCancel(&AbortError{Reason: cause})
	}
	done := a.loopDone
	a.mu.Unlock()
	for _, ch := range []chan struct{}{done, a.prepared} {
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	a.subMu.Lock()
	subs := a.subs
	a.subs = nil
	a.subMu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	if a.opts.OnClose != nil {
		a.closeOnce.Do(a.opts.OnClose)
	}
	return nil
}

// subscriber is one Subscribe registration. mu serializes deliveries so
// fn is never called concurrently with itself.
type subscriber struct {
	mu      sync.Mutex
	fn      func(Update)
	stopped bool
	unsub   func()
}

func (s *subscriber) deliver(u Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.fn(u)
	}
}

func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.unsub()
}

// Subscribe registers fn for every event appended to the agent's session
// from now on and for transient tool progress, in order. fn is called
// synchronously (events under the session's append lock), so it must be
// quick and must not append to the session or call the agent's inbox
// methods, Cancel or Close; it may call Status, ParkedCount and the
// accessors. The returned function unsubscribes; it is idempotent.
func (a *Agent) Subscribe(fn func(Update)) (unsubscribe func()) {
	s := &subscriber{fn: fn}
	s.unsub = a.sess.Subscribe(func(_ *session.Session, ev session.Event) {
		s.deliver(Update{Event: &ev})
	})
	a.subMu.Lock()
	a.subs = append(a.subs, s)
	a.subMu.Unlock()
	return func() {
		s.stop()
		a.subMu.Lock()
		defer a.subMu.Unlock()
		for i, x := range a.subs {
			if x == s {
				a.subs = append(a.subs[:i:i], a.subs[i+1:]...)
				break
			}
		}
	}
}

// publishNotice hands a model call's transient notice to every subscriber.
func (a *Agent) publishNotice(n model.Notice) {
	a.subMu.Lock()
	subs := append([]*subscriber(nil), a.subs...)
	a.subMu.Unlock()
	for _, s := range subs {
		s.deliver(Update{Notice: &n})
	}
}

// ReportProgress publishes a progress report of call callID after the
// call returned: a tool whose work outlives its call (a background
// delegation's child) keeps its call's display current with it. It may be
// called from any goroutine; like Subscribe's callbacks it must not be
// called under this agent's own session lock.
func (a *Agent) ReportProgress(callID string, p tool.Progress) { a.publishProgress(callID, p) }

// publishProgress hands a tool progress report to every subscriber.
func (a *Agent) publishProgress(callID string, p tool.Progress) {
	a.subMu.Lock()
	subs := append([]*subscriber(nil), a.subs...)
	a.subMu.Unlock()
	for _, s := range subs {
		s.deliver(Update{Progress: &ToolProgress{CallID: callID, Progress: p}})
	}
}
