package subagent

// This file is the continuation manager's way out: settlement of a
// quiescent activation, disposal of an activation tree, the settlement
// notice and drains (subagent-contract.md §2.7, §2.10).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
)

// quiescent reports whether a has no work: idle and nothing parked.
func quiescent(a *agent.Agent) bool {
	return a.Status() == agent.StatusIdle && a.ParkedCount() == 0
}

// trySettle disposes act if it is quiescent and owns no resident child.
func (c *Continuations) trySettle(act *activation) {
	if c.settleTried != nil {
		defer c.settleTried(act.id)
	}
	unlock := c.lockChild(act.id)
	defer unlock()
	c.mu.Lock()
	// While a drain covers act, the drain disposes it and reports how.
	if c.acts[act.id] != act || act.disposing || act.drained || c.draining || len(act.owned) > 0 {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if !quiescent(act.agent) {
		return
	}
	c.mu.Lock()
	act.disposing = true
	c.mu.Unlock()
	if err := c.dispose(act, false); err != nil {
		c.log.Warn(fmt.Sprintf("subagent %q activation teardown failed: %v", act.id, err))
	}
}

// disposeTree disposes act (cancelling its turn) after its owned children.
// It takes act's child lock.
func (c *Continuations) disposeTree(act *activation) error {
	unlock := c.lockChild(act.id)
	defer unlock()
	c.mu.Lock()
	if c.acts[act.id] != act || act.disposing {
		c.mu.Unlock()
		return nil
	}
	act.disposing = true
	c.mu.Unlock()
	return c.dispose(act, true)
}

// dispose tears act down (subagent-contract.md §2.7 "Disposal of one
// Activation"). Caller holds act's child lock and has set disposing.
func (c *Continuations) dispose(act *activation, cancel bool) error {
	ctx := context.Background()
	a := act.agent
	if cancel {
		c.cancel(act, session.AbortReason{Kind: "parent"}, false)
	}
	var errs []error
	c.mu.Lock()
	owned := slices.Collect(maps.Values(act.owned))
	c.mu.Unlock()
	slices.SortFunc(owned, func(x, y *activation) int { return strings.Compare(x.id, y.id) })
	for _, child := range owned {
		if err := c.disposeTree(child); err != nil {
			errs = append(errs, fmt.Errorf("subagent %q child teardown failed: %w", act.id, err))
		}
	}
	if err := a.WaitIdle(ctx); err != nil && !errors.Is(err, agent.ErrClosed) {
		errs = append(errs, err)
	}
	if c.durable != nil {
		if err := c.durable.Flush(ctx, act.id); err != nil {
			c.log.Warn(fmt.Sprintf("subagent %q best-effort final session flush failed; the persisted state may be unavailable or stale on resume: %v", act.id, err))
		}
	}
	events, err := a.Session().EventsFrom(act.startSeq)
	if err != nil {
		errs = append(errs, fmt.Errorf("subagent %q log unreadable at settlement: %w", act.id, err))
	}
	stop := driver.EpochStopReason(events)
	output := agent.FinalOutput(events)
	if stop == driver.StopError && act.provider == ExternalProvider {
		act.diagnostic = driver.OneShotDiagnostic(events)
	}
	act.account, act.spent = c.kids.spend.account(a, events)
	if err := c.kids.ReleaseChild(ctx, a); err != nil {
		errs = append(errs, fmt.Errorf("subagent %q activation handle disposal failed: %w", act.id, err))
	}
	if len(errs) > 0 {
		stop, output = driver.StopError, nil
	}
	wt := c.settleWorktree(act, Work{Label: act.label, Output: output, Stop: stop})
	c.retire(act, stop, output, wt)
	if len(errs) > 0 {
		return wrapError(CodeActivationTeardownFailed, fmt.Sprintf("subagent %q activation teardown failed: %v", act.id, errors.Join(errs...)), errors.Join(errs...))
	}
	return nil
}

// retire drops a released act from the table, sends its notice, lets its
// owner settle when act was its last resident child and publishes the
// end edge.
func (c *Continuations) retire(act *activation, stop string, output []session.Block, wt *WorktreeOutcome) {
	c.mu.Lock()
	delete(c.acts, act.id)
	announced := act.announced
	c.mu.Unlock()
	digest := act.settled(stop, wt)
	if announced {
		c.notify(act, stop, output, wt, digest)
	}
	// The slot frees after the notice is delivered, so a start waiting for
	// it runs after the parent has the notice.
	c.releaseSlot(act.slotRoot)
	c.mu.Lock()
	settleOwner := c.disownLocked(act)
	c.mu.Unlock()
	if settleOwner {
		c.idleHook(act.owner)(act.owner.agent)
	}
	end := c.lifecycle(act, EventEnd)
	end.StopReason = stop
	if len(output) > 0 {
		end.LastAssistantMessage = output
	}
	c.lc.emit(end)
}

// notify sends the settlement notice to act's direct parent when it is
// live (subagent-contract.md §2.10): injected without a wake while the
// parent's lineage drains or the parent's own Activation is being disposed
// (a selected-child drain takes its forest down child-first: the notice
// must not start a turn in the agent being taken down), otherwise a new
// turn for an idle parent and the next step of a running one.
func (c *Continuations) notify(act *activation, stop string, output []session.Block, wt *WorktreeOutcome, digest string) {
	parent := c.live.get(act.parentID)
	if parent == nil {
		return
	}
	msg := SettlementNotice(act.id, stop, output)
	if act.diagnostic != "" && stop == driver.StopError && act.provider == ExternalProvider {
		// The cause, as a foreground result says it: an external agent
		// that crashed, hung or refused. (Our own children's notices keep
		// the contract's exact text, subagent-contract.md §2.10.)
		msg.Content = append(msg.Content[:1:1], append([]session.Block{session.Text("Cause: " + act.diagnostic)}, msg.Content[1:]...)...)
	}
	if wt != nil {
		msg.Content = append(msg.Content, worktreeNotice(wt))
	}
	msg.Content = append(msg.Content, act.account...)
	msg.ChildUsage = childUsage(act.spent)
	msg.Source.Digest, msg.Source.Stop = digest, stop
	c.mu.Lock()
	owner := act.owner
	parentDisposing := owner != nil && owner.agent == parent && owner.disposing
	c.mu.Unlock()
	var err error
	switch {
	case parentDisposing || c.admit(parent) != nil:
		_, err = parent.Inject(msg)
	case parent.Status() == agent.StatusRunning:
		_, err = parent.Steer(msg)
	default:
		_, err = parent.Followup(msg)
	}
	if err != nil {
		c.log.Warn(fmt.Sprintf("subagent %q settlement notice was not delivered to its parent: %v", act.id, err))
	}
}

// Drain closes admission for the whole manager, waits for in-flight
// materializations and disposes every resident activation child-first,
// flushing each child (subagent-contract.md §2.7, manager-wide drain).
// Notices go to live parents by injection (no new turn).
func (c *Continuations) Drain(ctx context.Context) error {
	c.mu.Lock()
	c.draining = true
	c.signalSlots() // queued starts see the drain
	c.mu.Unlock()
	c.cancelStarting("", errStartDrained) // checkouts in flight stop now
	if c.drainBegan != nil {
		c.drainBegan()
	}
	return c.drainWhere(ctx, func(*activation) bool { return true }, "activation(s)")
}

// DrainDescendants closes admission below each exact live root and
// disposes the roots' strict descendant activations child-first. Stale
// roots (not the registry's current entry) are ignored.
func (c *Continuations) DrainDescendants(ctx context.Context, roots ...*agent.Agent) error {
	if c.live.reg == nil {
		return nil
	}
	var live []*agent.Agent
	c.mu.Lock()
	for _, r := range roots {
		if c.live.exact(r) {
			c.drainRoots[r.ID()] = r
			live = append(live, r)
		}
	}
	c.signalSlots()
	c.mu.Unlock()
	if len(live) == 0 {
		return nil
	}
	below := func(act *activation) bool {
		for _, r := range live {
			if act.agent != r && act.ancestry[r] {
				return true
			}
		}
		return false
	}
	// Cancel synchronously first so no descendant starts new work while
	// the tree is taken down.
	c.mu.Lock()
	var targets []*activation
	for _, act := range c.acts {
		if below(act) && !act.disposing {
			act.drained = true
			targets = append(targets, act)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(targets, func(x, y *activation) int { return x.depth - y.depth })
	for _, act := range targets {
		c.cancel(act, session.AbortReason{Kind: "parent"}, false)
	}
	return c.drainWhere(ctx, below, "scoped activation(s)")
}

// DrainChildren disposes the selected resident continuable children of
// parent and the forests they own, child-first (subagent-contract.md §2.7
// drainContinuableChildren). parent must be the registry's exact live
// entry and every selected resident child a direct child of it, or nothing
// is disposed (UNAUTHORIZED); absent or settled ids are ignored and
// duplicates count once. Unlike the drains it does not close admission: a
// later follow-up cold-resumes a disposed child. Failures are aggregated
// into ACTIVATION_TEARDOWN_FAILED; each failed child is still released.
func (c *Continuations) DrainChildren(ctx context.Context, parent *agent.Agent, childIDs ...string) error {
	if c.live.reg == nil {
		return nil
	}
	if !c.live.exact(parent) {
		return NewError(CodeUnauthorized, "selected child teardown requires the exact live parent agent")
	}
	var targets []*activation
	seen := map[string]bool{}
	c.mu.Lock()
	for _, id := range childIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		act := c.acts[id]
		if act == nil {
			continue
		}
		if act.parentID != parent.ID() || !act.ancestry[parent] {
			c.mu.Unlock()
			return Errorf(CodeUnauthorized, "subagent %q is not a direct child of agent %q", id, parent.ID())
		}
		targets = append(targets, act)
	}
	c.mu.Unlock()
	var errs []error
	for _, act := range targets {
		if err := c.disposeTree(act); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			errs = append(errs, context.Cause(ctx))
			break
		}
	}
	if len(errs) > 0 {
		joined := errors.Join(errs...)
		return wrapError(CodeActivationTeardownFailed, fmt.Sprintf("continuable subagent teardown failed for %d selected activation(s): %v", len(errs), joined), joined)
	}
	return nil
}

func (c *Continuations) drainWhere(ctx context.Context, match func(*activation) bool, noun string) error {
	var errs []error
	for {
		// Wait for materializations and settlements in flight, then take
		// down the topmost matching activations; repeat until none is left
		// (a settlement may have released an owner meanwhile).
		c.waitWork()
		tops := c.topmost(match)
		if len(tops) == 0 {
			break
		}
		for _, act := range tops {
			if err := c.disposeTree(act); err != nil {
				errs = append(errs, err)
			}
		}
		if ctx.Err() != nil {
			errs = append(errs, context.Cause(ctx))
			break
		}
	}
	c.waitWork()
	if len(errs) > 0 {
		joined := errors.Join(errs...)
		return wrapError(CodeActivationTeardownFailed, fmt.Sprintf("continuable subagent teardown failed for %d %s: %v", len(errs), noun, joined), joined)
	}
	return nil
}

// topmost returns the matching activations whose owner does not match, in
// id order.
func (c *Continuations) topmost(match func(*activation) bool) []*activation {
	c.mu.Lock()
	var tops []*activation
	for _, act := range c.acts {
		if !match(act) || act.disposing {
			continue
		}
		if act.owner != nil && match(act.owner) && c.acts[act.owner.id] == act.owner {
			continue
		}
		tops = append(tops, act)
	}
	c.mu.Unlock()
	slices.SortFunc(tops, func(x, y *activation) int { return strings.Compare(x.id, y.id) })
	return tops
}
