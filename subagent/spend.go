package subagent

// This file wires package subagent/budgets into the runtime: every child
// agent gets a Limit hook that folds its own usage, reports it to its
// root's tree meter, warns it once near a limit and ends its turn with
// stop reason "budget" when it or its tree reaches one; root sessions get
// the tree check alone (RootLimit). The stall watchdog is fed from the
// same place (spend.progress) and swept by Runtime.SweepStalls.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// BudgetOptions configure the runtime's budgets.
type BudgetOptions struct {
	// Prices overrides the built-in price table (the user's settings).
	Prices *budget.Prices
	// Tree bounds every root session's tree (MaxTokens, MaxCostUSD; the
	// other fields are ignored).
	Tree budgets.Limits
	// StallAfter is the watchdog's quiet time (0: budgets.DefaultStallAfter;
	// negative: off); InterruptStalled also interrupts a stalled child.
	StallAfter       time.Duration
	InterruptStalled bool
	// Now is the watchdog's clock (nil: time.Now).
	Now func() time.Time
}

// spending is the runtime's budget state: the tree meter and which root
// each live child belongs to.
type spending struct {
	opts  BudgetOptions
	meter *budgets.Meter
	dog   *budgets.Watchdog

	// reader reads the stored sessions a tree spent in before this
	// process (seedTree); nil without persistence.
	reader SessionReader

	mu      sync.Mutex
	roots   map[string]string // child id → root session id
	parents map[string]string // child id → parent session id (watched)
	// above is every metered session's parent (the subtree sums).
	above map[string]string
	// seeded marks the roots whose stored tree was read into the meter
	// (or found to have nothing stored).
	seeded map[string]bool
}

func newSpending(o BudgetOptions) *spending {
	after := o.StallAfter
	switch {
	case after == 0:
		after = budgets.DefaultStallAfter
	case after < 0:
		after = 0
	}
	return &spending{opts: o, meter: budgets.NewMeter(o.Prices), dog: budgets.NewWatchdog(after, o.Now),
		roots: map[string]string{}, parents: map[string]string{}, seeded: map[string]bool{}, above: map[string]string{}}
}

// rootOf returns the root session of a's tree.
func (s *spending) rootOf(a *agent.Agent) string {
	if a.Session().Header().DelegationDepth == 0 {
		return a.ID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.roots[a.ID()]; ok {
		return r
	}
	return a.Session().Header().ParentSession // best effort: a depth-1 child
}

// adopt records child's root (its parent's).
func (s *spending) adopt(childID string, parent *agent.Agent) string {
	root := s.rootOf(parent)
	s.mu.Lock()
	s.roots[childID] = root
	s.above[childID] = parent.ID()
	s.mu.Unlock()
	s.seedTree(root)
	return root
}

// markSeeded records that root's stored tree needs no reading and
// reports whether it was marked already.
func (s *spending) markSeeded(root string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.seeded[root]
	s.seeded[root] = true
	return was
}

// seedTree reads, once per root and process, what the stored sessions
// below root spent (each its own log after its seed) into the meter as
// a baseline (Meter.Seed), so a tree limit also counts the spending of
// the tree before a restart. A session whose live counter reported
// already keeps its own figure; one reporting later replaces the
// baseline with its whole log, which the baseline is a prefix of. The
// root's own spending is its live counter's (its whole log is live).
// Best effort: an unreadable log counts nothing.
func (s *spending) seedTree(root string) {
	if s.reader == nil || root == "" || s.markSeeded(root) {
		return
	}
	ctx := context.Background()
	entries, err := s.reader.List(ctx)
	if err != nil {
		return
	}
	parent := make(map[string]string, len(entries))
	for _, e := range entries {
		parent[e.Header.ID] = e.Header.ParentSession
	}
	s.mu.Lock()
	for id, p := range parent {
		if _, ok := s.above[id]; !ok && below(parent, id, root) {
			s.above[id] = p
		}
	}
	s.mu.Unlock()
	for _, e := range entries {
		if !below(parent, e.Header.ID, root) {
			continue
		}
		h, events, err := s.reader.Inspect(ctx, e.Header.ID)
		if err != nil {
			continue
		}
		var c budgets.Counter
		c.Fold(events, h.SeedLength)
		s.meter.Seed(root, h.ID, c.Ledger())
	}
}

// below reports whether id's parent chain reaches root (a loop ends the
// walk).
func below(parent map[string]string, id, root string) bool {
	for seen := 0; id != "" && id != root && seen <= len(parent); seen++ {
		p := parent[id]
		if p == root {
			return true
		}
		id = p
	}
	return false
}

// meterState is one agent's own counter, owned by its loop goroutine.
type meterState struct {
	counter budgets.Counter
}

// advance folds what a's log gained since the last call and reports the
// ledger to root's tree; it returns a's own usage and its tree's.
func (s *spending) advance(st *meterState, a *agent.Agent, root string) (own, tree budget.Usage) {
	sess := a.Session()
	if evs, err := sess.EventsFrom(st.counter.Next()); err == nil {
		st.counter.Fold(evs, sess.Header().SeedLength)
	}
	l := st.counter.Ledger()
	return l.Usage(s.meter.Prices()), s.meter.Set(root, a.ID(), l)
}

// childHook is the Limit hook of a child running under limits.
func (s *spending) childHook(childID string, parent *agent.Agent, limits budgets.Limits) agent.LimitFunc {
	root := s.adopt(childID, parent)
	st := &meterState{}
	return func(ctx context.Context, a *agent.Agent, step agent.StepInfo) *session.TurnEndReason {
		s.dog.Progress(a.ID())
		own, tree := s.advance(st, a, root)
		v := budgets.Check(limits, own)
		if v.Reached != "" {
			return &session.TurnEndReason{Kind: session.TurnEndBudget, Detail: v.Detail}
		}
		tv := budgets.Check(s.opts.Tree, tree)
		if tv.Reached != "" {
			return &session.TurnEndReason{Kind: session.TurnEndBudget, Detail: "its session tree " + tv.Detail}
		}
		if v.Fraction >= budgets.WarnAt && !st.counter.Warned {
			st.counter.Warned = true
			if _, err := a.Steer(warningMessage(budgets.Warning(limits, own))); err != nil {
				return nil // the warning is a courtesy; the limit still holds
			}
		}
		return nil
	}
}

// RootLimit returns the Limit hook of a root session: its own usage is
// reported to its tree's meter, and its turn ends with "budget" when the
// tree reached the tree limit (BudgetOptions.Tree).
func (rt *Runtime) RootLimit() agent.LimitFunc {
	s := rt.spend
	var mu sync.Mutex
	states := map[string]*meterState{}
	return func(ctx context.Context, a *agent.Agent, step agent.StepInfo) *session.TurnEndReason {
		mu.Lock()
		st := states[a.ID()]
		first := st == nil
		if first {
			st = &meterState{}
			states[a.ID()] = st
		}
		mu.Unlock()
		if first {
			// A root whose log names no child has no stored tree to read
			// (a new session): only one that delegated before this
			// process, a loaded one, does.
			if events, err := a.Session().Events(); err == nil && len(delegatedChildren(events).ids) == 0 {
				s.markSeeded(a.ID())
			}
			s.seedTree(a.ID())
		}
		_, tree := s.advance(st, a, a.ID())
		if tv := budgets.Check(s.opts.Tree, tree); tv.Reached != "" {
			return &session.TurnEndReason{Kind: session.TurnEndBudget, Detail: "the session tree " + tv.Detail}
		}
		return nil
	}
}

// TreeUsage returns what root's tree spent as metered in this process:
// every session of the tree that ran here, each counted over its whole
// own log.
func (rt *Runtime) TreeUsage(root string) budget.Usage {
	// The root's last response came after its last Limit check: fold its
	// whole log now when it is live here.
	if sess, ok := rt.Service.kids.sessions.Get(root); ok {
		if events, err := sess.Events(); err == nil {
			var c budgets.Counter
			c.Fold(events, sess.Header().SeedLength)
			rt.spend.meter.Set(root, root, c.Ledger())
		}
	}
	return rt.spend.meter.Tree(root)
}

// ChildrenUsage returns what the sessions below root spent, as metered
// in this process and read from the stored tree of a root that delegated
// before it (the parent's usage_update adds it to the root's own).
func (rt *Runtime) ChildrenUsage(root string) budget.Usage {
	rt.spend.seedTree(root)
	return rt.spend.meter.TreeExcept(root, root)
}

// Prices returns the runtime's price overrides (nil: the built-in table).
func (rt *Runtime) Prices() *budget.Prices { return rt.spend.opts.Prices }

// warningMessage is the steer message of the 80% warning.
func warningMessage(text string) session.Message {
	return session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(text)}}
}

// limitsDetail words a child's limits for its parent ("maxTokens 1000,
// timeout 30s"); "" for none.
func limitsDetail(l budgets.Limits) string {
	var parts []string
	if l.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("maxTokens %d", l.MaxTokens))
	}
	if l.MaxCostUSD > 0 {
		parts = append(parts, "maxCostUsd "+budget.FormatUSD(l.MaxCostUSD))
	}
	if l.MaxTurns > 0 {
		parts = append(parts, fmt.Sprintf("maxTurns %d", l.MaxTurns))
	}
	if l.Timeout > 0 {
		parts = append(parts, "timeout "+l.Timeout.String())
	}
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ", "
		}
		out += p
	}
	return out
}

// account folds a's whole own log once more (its last response came
// after its last Limit check), reports it to the tree meter and returns
// what a notice or a result says of it: the limit that ended the last
// turn of tail (the epoch's events), then the child's usage (nil when
// there is nothing to say: no usage reported, no limit reached); and
// what the child and its descendants spent, for the parent's usage
// display (nil when nothing).
func (s *spending) account(a *agent.Agent, tail []session.Event) ([]session.Block, *budget.Usage) {
	if s == nil || a == nil {
		return nil, nil
	}
	s.dog.Stop(a.ID())
	events, err := a.Session().Events()
	if err != nil {
		return nil, nil
	}
	var c budgets.Counter
	c.Fold(events, a.Session().Header().SeedLength)
	l := c.Ledger()
	s.mu.Lock()
	root, ok := s.roots[a.ID()]
	s.mu.Unlock()
	if ok {
		s.meter.Set(root, a.ID(), l)
	}
	var out []session.Block
	if d := limitDetail(tail); d != "" {
		out = append(out, session.Text("Limit: it "+d+"."))
	}
	if u := l.Usage(s.meter.Prices()); !u.Zero() {
		out = append(out, session.Text("Usage: "+u.String()+"."))
	}
	var spent *budget.Usage
	if ok {
		if u := s.subtree(root, a.ID()); !u.Zero() {
			spent = &u
		}
	}
	return out, spent
}

// subtree is what id and the sessions below it in root's tree spent, as
// metered.
func (s *spending) subtree(root, id string) budget.Usage {
	ledgers := s.meter.Ledgers(root)
	s.mu.Lock()
	defer s.mu.Unlock()
	var u budget.Usage
	for x, l := range ledgers {
		in := x == id
		for p, n := s.above[x], 0; !in && p != "" && n <= len(s.above); p, n = s.above[p], n+1 {
			in = p == id
		}
		if in {
			u.Add(l.Usage(s.meter.Prices()))
		}
	}
	return u
}

// childUsage renders u for a notice (session.Message.ChildUsage); nil for
// none.
func childUsage(u *budget.Usage) json.RawMessage {
	if u == nil {
		return nil
	}
	raw, err := json.Marshal(u)
	if err != nil {
		return nil
	}
	return raw
}

// limitDetail is the Detail of the last turn/end of events when a limit
// ended that turn.
func limitDetail(events []session.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != session.TypeTurnEnd {
			continue
		}
		d, err := session.DecodeData[session.TurnEndData](events[i])
		if err != nil {
			return ""
		}
		switch d.Reason.Kind {
		case session.TurnEndBudget, session.TurnEndTimeout:
			return d.Reason.Detail
		}
		return ""
	}
	return ""
}

// watch feeds the stall watchdog from a's updates: every model chunk,
// every tool progress report (a command that prints) and every log event
// is a sign of life.
func (s *spending) watch(a *agent.Agent, parentID string) {
	if s.dog.After() == 0 {
		return
	}
	id := a.ID()
	s.mu.Lock()
	s.parents[id] = parentID
	s.mu.Unlock()
	a.Subscribe(func(agent.Update) { s.dog.Progress(id) })
}

// Stalled reports whether child id is stalled now (list_agents).
func (rt *Runtime) Stalled(id string) bool {
	st, _ := rt.spend.dog.Stalled(id)
	return st
}

// StallNotice is the message a parent gets about a stalled child.
func StallNotice(childID string, quiet time.Duration, interrupted bool) session.Message {
	text := fmt.Sprintf("Subagent %s has shown no model output and no tool progress for %s: it may be stalled.", childID, quiet.Round(time.Second))
	if interrupted {
		text += " It was interrupted (subagents.interruptStalled); send_message gives it more work."
	} else {
		text += " You may wait, send it a message, or interrupt it with interrupt_agent."
	}
	return session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(text)},
		Source: session.Source{Kind: session.SourceSubagentSettled, Form: "notice", Summary: BoundSummary(text), SenderSessionID: childID}}
}

// SweepStalls reports the children that became stalled since the last
// sweep to their live parents (a notice the model sees: the next step of
// a running parent, a new turn of an idle one) and, with
// InterruptStalled, interrupts them. It returns the stalled ids. The
// owner of WatchStalls calls it; tests call it with a fake clock.
func (rt *Runtime) SweepStalls() []string {
	s := rt.spend
	ids := s.dog.Sweep()
	for _, id := range ids {
		s.mu.Lock()
		parentID := s.parents[id]
		s.mu.Unlock()
		child := rt.Service.live.get(id)
		if child == nil || child.Status() != agent.StatusRunning {
			s.dog.Stop(id)
			continue
		}
		interrupted := false
		if s.opts.InterruptStalled {
			child.Cancel(session.AbortReason{Kind: "parent", Detail: "stalled"}, true)
			interrupted = true
		}
		parent := rt.Service.live.get(parentID)
		if parent == nil {
			continue
		}
		msg := StallNotice(id, s.dog.After(), interrupted)
		var err error
		if parent.Status() == agent.StatusRunning {
			_, err = parent.Steer(msg)
		} else {
			_, err = parent.Followup(msg)
		}
		if err != nil {
			rt.Service.kids.log.Warn("subagent: stall notice not delivered", "session", id, "err", err)
		}
	}
	return ids
}

// WatchStalls sweeps for stalled children until ctx ends (its owner
// starts it once and waits for it).
func (rt *Runtime) WatchStalls(ctx context.Context) {
	after := rt.spend.dog.After()
	if after == 0 {
		return
	}
	t := time.NewTicker(max(after/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rt.SweepStalls()
		}
	}
}

// Usage returns what session id spent on its own (its log's responses
// after its seed, at the runtime's prices), read from the live session;
// ok is false when id is not live here (listings read the subagentUsage
// projection instead: ListEntry.Usage). The child state snapshot uses it.
func (rt *Runtime) Usage(id string) (budget.Usage, bool) {
	sess, ok := rt.Service.kids.sessions.Get(id)
	if !ok {
		return budget.Usage{}, false
	}
	events, err := sess.Events()
	if err != nil {
		return budget.Usage{}, false
	}
	return budgets.Own(events, sess.Header().SeedLength, rt.spend.opts.Prices), true
}
