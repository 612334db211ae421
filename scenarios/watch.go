package scenarios

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// watcher folds what the runtime reports (every appended event through a
// session.Store observer, every model call through the model decorator)
// into the facts scenario waits ask about. A wait re-checks its condition
// each time a fact changes: no polling, no sleeping.
type watcher struct {
	mu       sync.Mutex
	sessions map[string]*sessionFacts
	changed  chan struct{} // closed and replaced on every change
}

type sessionFacts struct {
	header       session.Header
	label        string
	turnStarted  map[int]bool
	turnEnded    map[int]bool
	open         bool
	pending      int // inbox items inserted and not yet claimed or dropped
	notices      int // settlement notices received
	modelEntered map[int]bool
	stepReached  map[int]bool // step boundaries reached, by the next call
	// queued counts the session's background starts that waited for a
	// slot.
	queued     int
	unanswered int // prompts sent by the client and not answered yet
}

func newWatcher() *watcher {
	return &watcher{sessions: map[string]*sessionFacts{}, changed: make(chan struct{})}
}

// observe registers the watcher on a store; call before the store gets its
// first session.
func (w *watcher) observe(st *session.Store) (unregister func()) {
	return st.Observe(&session.Observer{
		Created: func(s *session.Session, restored bool) {
			// A restored session arrives with its log, all in memory: a
			// session entering its store has evicted nothing yet, so the
			// view reads no storage and cannot fail.
			evs, _ := s.EventsView()
			w.mu.Lock()
			defer w.mu.Unlock()
			// A session (re)entering a store brings its whole log: fold it
			// from scratch (after a restart the old facts are stale).
			f := w.factsLocked(s.ID())
			f.header, f.label, f.open, f.pending, f.notices = s.Header(), "", false, 0, 0
			clear(f.turnStarted)
			clear(f.turnEnded)
			for _, ev := range evs {
				f.apply(ev)
			}
			w.bumpLocked()
		},
		Appended: func(s *session.Session, ev session.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			f := w.factsLocked(s.ID())
			f.header = s.Header()
			f.apply(ev)
			w.bumpLocked()
		},
	})
}

func (w *watcher) factsLocked(id string) *sessionFacts {
	f, ok := w.sessions[id]
	if !ok {
		f = &sessionFacts{turnStarted: map[int]bool{}, turnEnded: map[int]bool{}, modelEntered: map[int]bool{}, stepReached: map[int]bool{}}
		w.sessions[id] = f
	}
	return f
}

func (w *watcher) bumpLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (f *sessionFacts) apply(ev session.Event) {
	switch ev.Type {
	case session.TypeTurnStart:
		if d, err := session.DecodeData[session.TurnData](ev); err == nil {
			f.turnStarted[d.Turn] = true
		}
		f.open = true
	case session.TypeTurnEnd:
		if d, err := session.DecodeData[session.TurnEndData](ev); err == nil {
			f.turnEnded[d.Turn] = true
		}
		f.open = false
	case session.TypeInboxSpliced:
		d, err := session.DecodeData[session.InboxSplicedData](ev)
		if err != nil {
			return
		}
		f.pending += len(d.Inserted)
		if d.RemovedCount != nil {
			f.pending -= *d.RemovedCount
		}
		for _, m := range d.Inserted {
			if m.Source.Kind == session.SourceSubagentSettled {
				f.notices++
			}
		}
	case session.TypeDescriptor:
		if d, err := session.DecodeData[descriptorLabel](ev); err == nil && d.Label != "" {
			f.label = d.Label
		}
	}
}

// descriptorLabel is the one descriptor field waits use.
type descriptorLabel struct {
	Label string `json:"label"`
}

func (w *watcher) promptSent(sessionID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.factsLocked(sessionID).unanswered++
	w.bumpLocked()
}

func (w *watcher) promptAnswered(sessionID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.factsLocked(sessionID).unanswered--
	w.bumpLocked()
}

// queuedStart records that a background start of parentID began to wait
// for a slot.
func (w *watcher) queuedStart(parentID, _ string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.factsLocked(parentID).queued++
	w.bumpLocked()
}

// modelCall records that a session entered a model call.
func (w *watcher) modelCall(c model.Caller) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.factsLocked(c.SessionID)
	f.modelEntered[c.Call] = true
	if f.label == "" && c.ScriptKey != "" && c.ScriptKey != MainRef {
		f.label = c.ScriptKey
	}
	w.bumpLocked()
}

// stepReached records that a session reached the step boundary before
// model call c.Call.
func (w *watcher) stepReached(c model.Caller) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.factsLocked(c.SessionID)
	if f.stepReached[c.Call] {
		return
	}
	f.stepReached[c.Call] = true
	if f.label == "" && c.ScriptKey != "" && c.ScriptKey != MainRef {
		f.label = c.ScriptKey
	}
	w.bumpLocked()
}

// observedModel is the decorator the runner puts around the
// composition's model. When a call's stream starts being consumed it
// records the request, holds the call while a fence says so, then tells
// the watcher the call was entered and passes everything through.
type observedModel struct {
	inner model.Model
	r     *runner
	sys   *System // the process the model belongs to, set before it serves
}

func (m observedModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	inner := m.inner.Stream(ctx, req)
	return func(yield func(session.Chunk, error) bool) {
		m.r.requests.add(req)
		for _, f := range m.r.sc.Fences {
			if f.AtStep || f.Key != req.Caller.ScriptKey || f.Call != req.Caller.Call {
				continue
			}
			if err := m.r.awaitCondition(ctx, *m.sys, f.UntilSession, f.Until); err != nil {
				yield(session.Chunk{}, fmt.Errorf("scenario fence at %s:%d: %w", m.r.sc.File, f.Line, err))
				return
			}
		}
		m.r.watch.modelCall(req.Caller)
		for c, err := range inner {
			if !yield(c, err) {
				return
			}
		}
	}
}

// holdStep is the agents' step gate (agent.Options.StepGate): it holds
// the step boundary before model call c.Call of the sessions with script
// key c.ScriptKey while a step fence (at: step) says so. A fence that
// cannot be met before the turn ends lets the step go on: the turn was
// cancelled, or the run gave up (its timeout names the step waited for).
func (r *runner) holdStep(ctx context.Context, sys System, c model.Caller) {
	r.watch.stepReached(c)
	for _, f := range r.sc.Fences {
		if !f.AtStep || f.Key != c.ScriptKey || f.Call != c.Call {
			continue
		}
		if err := r.awaitCondition(ctx, sys, f.UntilSession, f.Until); err != nil && ctx.Err() == nil {
			r.logger.Warn("scenario step fence not met", "file", r.sc.File, "line", f.Line, "err", err)
		}
	}
}

// resolver maps session references to ids.
type resolver interface {
	resolve(ref string) (string, bool)
}

// resolveLocked finds the session a reference names: a known reference,
// a session id, or a child's delegation label (unique).
func (w *watcher) resolveLocked(refs resolver, ref string) (string, bool) {
	if id, ok := refs.resolve(ref); ok {
		return id, true
	}
	if _, ok := w.sessions[ref]; ok {
		return ref, true
	}
	var found []string
	for id, f := range w.sessions {
		if f.label == ref {
			found = append(found, id)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}

// await blocks until every condition of wt holds for the session ref names.
func (w *watcher) await(ctx context.Context, refs resolver, ref string, wt Wait) error {
	for {
		w.mu.Lock()
		ok, state := w.checkLocked(refs, ref, wt)
		ch := w.changed
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting (%w); last state: %s", context.Cause(ctx), state)
		}
	}
}

func (w *watcher) checkLocked(refs resolver, ref string, wt Wait) (bool, string) {
	id, ok := w.resolveLocked(refs, ref)
	if !ok {
		return false, fmt.Sprintf("session %q not known yet", ref)
	}
	f := w.factsLocked(id)
	var unmet []string
	if wt.ChildSettled > 0 && f.notices < wt.ChildSettled {
		unmet = append(unmet, fmt.Sprintf("%d of %d settlement notices", f.notices, wt.ChildSettled))
	}
	if wt.TurnStarted > 0 && !f.turnStarted[wt.TurnStarted] {
		unmet = append(unmet, fmt.Sprintf("turn %d not started (started: %v)", wt.TurnStarted, keys(f.turnStarted)))
	}
	if wt.TurnEnded > 0 && !f.turnEnded[wt.TurnEnded] {
		unmet = append(unmet, fmt.Sprintf("turn %d not ended (ended: %v)", wt.TurnEnded, keys(f.turnEnded)))
	}
	if wt.StepReached != nil && !f.stepReached[*wt.StepReached] {
		unmet = append(unmet, fmt.Sprintf("step before model call %d not reached (reached: %v)", *wt.StepReached, keys(f.stepReached)))
	}
	if wt.Queued > 0 && f.queued < wt.Queued {
		unmet = append(unmet, fmt.Sprintf("%d of %d background starts queued", f.queued, wt.Queued))
	}
	if wt.ModelCall != nil && !f.modelEntered[*wt.ModelCall] {
		unmet = append(unmet, fmt.Sprintf("model call %d not entered (entered: %v)", *wt.ModelCall, keys(f.modelEntered)))
	}
	// Idle is checked last so it applies after the other facts hold.
	if wt.Idle && (f.open || f.pending > 0 || f.unanswered > 0) {
		unmet = append(unmet, fmt.Sprintf("not idle (open turn: %v, unclaimed inbox items: %d, unanswered prompts: %d)", f.open, f.pending, f.unanswered))
	}
	if len(unmet) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("session %s: %s", id, strings.Join(unmet, "; "))
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
