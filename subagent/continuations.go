package subagent

// This file is the continuation manager: the Activations of continuable
// children (subagent-contract.md §2.3–2.7, §2.10). Settlement, disposal and
// drains are in settle.go.
//
// An Activation is one residency epoch of a continuable child: its live
// Agent (registered), its live session, the set of continuable children it
// owns and the materialization-time ancestry used for interrupt authority.
// A settled child holds nothing: its Agent is closed and unregistered, its
// session removed from the live store (flushed and unlocked in
// persistence), and its Activation dropped. The next send_message
// cold-resumes it from disk.
//
// Locking: Continuations.mu guards the activation table and every
// activation's mutable fields; it is never held while calling into an
// Agent. A per-child lock (lockChild) serializes materialization,
// submission and disposal of one child; lock order is parent before child.
// Settlement runs on a short-lived goroutine started from the child's
// OnIdle callback (the callback runs on the agent's loop goroutine, which
// Close waits for); work counts those goroutines and in-flight
// materializations so that drains can wait for them.

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

type activation struct {
	// diagnostic is why an external child's last epoch failed (the error
	// its turn ended with), set at disposal: its settlement notice says it.
	diagnostic string
	id         string
	// label is the child's task label (the commit of its work names it).
	label    string
	agent    *agent.Agent
	provider string
	parentID string
	depth    int
	runID    string
	startSeq int
	// owner is the parent's activation when the parent is itself a
	// resident continuable child.
	owner    *activation
	owned    map[string]*activation
	ancestry map[*agent.Agent]bool

	disposing bool
	// drained marks an activation a scoped drain has cancelled: its
	// teardown belongs to the drain, which reports its failures, so the
	// idle callback the cancellation causes must not settle it first.
	drained   bool
	announced bool
	// started records that the epoch's subagent/start edge was published,
	// so a rollback must close it with a subagent/end.
	started bool
	// worktree is the child's worktree (isolation worktree); fresh marks a
	// new start, whose rollback removes it.
	worktree *WorktreeRecord
	// lease owns the worktree until the activation runs (made by its
	// start, or restored by its cold resume); rollback abandons it.
	lease *worktreeLease
	fresh bool
	// slotRoot is the root session whose background slot act holds ("":
	// none).
	slotRoot string
	// account is what the settlement notice says of the child's spending
	// and of a limit that stopped it (spend.go), set at disposal.
	account []session.Block
	// spent is what the child and its descendants spent (the notice's
	// ChildUsage), set at disposal.
	spent *budget.Usage
	// unwatch ends the watch's OnUpdate subscription, onSettled is its
	// OnSettled and onReplaced its OnReplaced: the start's, or the latest
	// watched message's (rewatch); all nil once called.
	unwatch    func()
	onSettled  func(stop string, wt *WorktreeOutcome) string
	onReplaced func()
}

// rewatch hands act's watch to w: the current one ends (its OnReplaced
// is called) and w gets the updates from here on. Caller holds act's
// child lock, which keeps settlement out.
func (act *activation) rewatch(w *Watch) {
	replaced := act.onReplaced
	act.unwatchAll()
	act.onSettled, act.onReplaced = w.OnSettled, w.OnReplaced
	if w.OnUpdate != nil {
		child := act.agent
		act.unwatch = child.Subscribe(func(u agent.Update) { w.OnUpdate(child, u) })
	}
	if replaced != nil {
		replaced()
	}
}

// unwatchAll drops act's watch without calling it.
func (act *activation) unwatchAll() {
	if act.unwatch != nil {
		act.unwatch()
	}
	act.unwatch, act.onSettled, act.onReplaced = nil, nil, nil
}

// settled ends the start's watch and runs its OnSettled, returning the
// digest for the notice.
func (act *activation) settled(stop string, wt *WorktreeOutcome) string {
	if act.unwatch != nil {
		act.unwatch()
		act.unwatch = nil
	}
	fn := act.onSettled
	act.onSettled, act.onReplaced = nil, nil
	if fn == nil {
		return ""
	}
	return fn(stop, wt)
}

// Continuations is the continuation manager: it owns the resident
// activations, their locks, admission (drains) and settlement.
type Continuations struct {
	live     liveAgents
	kids     *children
	durable  Durable
	lc       *Lifecycle
	log      *slog.Logger
	newRunID func() string

	mu         sync.Mutex
	acts       map[string]*activation
	draining   bool
	drainRoots map[string]*agent.Agent
	// work counts settlement goroutines and in-flight materializations.
	work     int
	workDone *sync.Cond

	// Background slots (queue.go): slots[root] counts the taken slots,
	// queue[root] the waiting starts; slotFreed is closed on each change.
	worktrees Worktrees
	intents   worktree.Intents
	// starting are the background starts whose child is being made
	// after their call returned (starting.go), guarded by mu.
	starting      map[string]*startingStart
	maxBackground int
	slots         map[string]int
	queue         map[string][]queuedStart
	slotFreed     chan struct{}
	onQueued      func(parentID, childID string)

	locksMu sync.Mutex
	locks   map[string]*childLock

	// drainBegan, when set (tests only, export_test.go), is called by
	// Drain once admission is closed.
	drainBegan func()
	// cancelled, when set (tests only, export_test.go), is called by
	// cancel each time the runtime cancels an activation's agent.
	cancelled func(id string, cause session.AbortReason, keepInbox bool)
	// Observers for tests (export_test.go), set before any child starts;
	// none changes what the runtime does. lockWaiting is called when
	// lockChild finds the child's lock taken, workWaiting when waitWork
	// finds work in flight, settleTried after each settlement attempt.
	lockWaiting func(id string)
	workWaiting func()
	settleTried func(id string)
}

type childLock struct {
	mu   sync.Mutex
	refs int
}

func newContinuations(live liveAgents, kids *children, durable Durable, lc *Lifecycle, log *slog.Logger, newRunID func() string) *Continuations {
	c := &Continuations{
		live: live, kids: kids, durable: durable, lc: lc, log: log, newRunID: newRunID,
		acts:       make(map[string]*activation),
		drainRoots: make(map[string]*agent.Agent),
		locks:      make(map[string]*childLock),
		slots:      make(map[string]int),
		queue:      make(map[string][]queuedStart),
		slotFreed:  make(chan struct{}),
	}
	c.workDone = sync.NewCond(&c.mu)
	return c
}

// lockChild takes the per-child lock of id and returns its release.
func (c *Continuations) lockChild(id string) (unlock func()) {
	c.locksMu.Lock()
	l := c.locks[id]
	if l == nil {
		l = &childLock{}
		c.locks[id] = l
	}
	l.refs++
	contended := l.refs > 1
	c.locksMu.Unlock()
	if contended && c.lockWaiting != nil {
		c.lockWaiting(id)
	}
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		c.locksMu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(c.locks, id)
		}
		c.locksMu.Unlock()
	}
}

func (c *Continuations) beginWork() {
	c.mu.Lock()
	c.work++
	c.mu.Unlock()
}

func (c *Continuations) endWork() {
	c.mu.Lock()
	c.work--
	if c.work == 0 {
		c.workDone.Broadcast()
	}
	c.mu.Unlock()
}

// waitWork waits until no settlement or materialization is in flight.
func (c *Continuations) waitWork() {
	c.mu.Lock()
	if c.work > 0 && c.workWaiting != nil {
		c.mu.Unlock()
		c.workWaiting()
		c.mu.Lock()
	}
	for c.work > 0 {
		c.workDone.Wait()
	}
	c.mu.Unlock()
}

// admit reports DRAINING when the manager or a live lineage root of a is
// draining.
func (c *Continuations) admit(a *agent.Agent) error {
	c.mu.Lock()
	draining := c.draining
	roots := maps.Clone(c.drainRoots)
	c.mu.Unlock()
	if draining {
		return NewError(CodeDraining, "continuable subagents are draining; the operation was not admitted")
	}
	if len(roots) == 0 || a == nil {
		return nil
	}
	seen := map[string]bool{}
	for cur := a; cur != nil && !seen[cur.ID()]; {
		id := cur.ID()
		seen[id] = true
		if root, ok := roots[id]; ok {
			if c.live.get(id) == root {
				return Errorf(CodeDraining, "continuable subagents below parent %q are draining; the operation was not admitted", id)
			}
			c.mu.Lock()
			if c.drainRoots[id] == root {
				delete(c.drainRoots, id) // the root left the registry
			}
			c.mu.Unlock()
		}
		parent := cur.Session().Header().ParentSession
		if parent == "" {
			break
		}
		cur = c.live.get(parent)
	}
	return nil
}

// lookup returns id's resident activation (nil when none) and whether it
// is being disposed.
func (c *Continuations) lookup(id string) (act *activation, disposing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	act = c.acts[id]
	if act != nil {
		disposing = act.disposing
	}
	return act, disposing
}

// Resident reports whether childID has a resident activation.
func (c *Continuations) Resident(childID string) bool {
	act, _ := c.lookup(childID)
	return act != nil
}

// ResidentCount returns the number of resident activations.
func (c *Continuations) ResidentCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acts)
}

// idleHook returns the OnIdle callback of act's agent: it schedules a
// settlement attempt off the loop goroutine.
func (c *Continuations) idleHook(act *activation) func(*agent.Agent) {
	return func(*agent.Agent) {
		c.beginWork()
		go func() {
			defer c.endWork()
			c.trySettle(act)
		}()
	}
}

// install records act as resident, owned by the parent's activation when
// there is one, and publishes the start edge.
func (c *Continuations) install(ctx context.Context, act *activation, parent *agent.Agent) error {
	act.ancestry = c.live.ancestry(parent)
	act.ancestry[act.agent] = true
	act.owned = map[string]*activation{}
	act.startSeq = act.agent.Session().Len()
	act.runID = c.newRunID()
	c.mu.Lock()
	if owner := c.acts[parent.ID()]; owner != nil && owner.agent == parent {
		if owner.disposing {
			c.mu.Unlock()
			return Errorf(CodeActivationClosing, "subagent parent %q is being disposed; the child was not established", parent.ID())
		}
		act.owner = owner
		owner.owned[act.id] = act
	}
	c.acts[act.id] = act
	c.mu.Unlock()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := c.admit(parent); err != nil {
		return err
	}
	start := c.lifecycle(act, EventStart)
	if err := c.lc.publish(start); err != nil {
		return wrapError(CodeStartPublicationFailed, fmt.Sprintf("subagent %q start publication failed: %v", act.id, err), err)
	}
	act.started = true
	c.lc.emit(start)
	return nil
}

func (c *Continuations) lifecycle(act *activation, typ string) LifecycleEvent {
	return LifecycleEvent{
		Type: typ, RunID: act.runID, Provider: act.provider, ID: act.id, ParentID: act.parentID,
		Mode: ModeContinuable, Depth: act.depth, Local: true,
	}
}

// rollback undoes a start or resume that failed before acceptance: no
// notice, and a subagent/end (stop reason aborted, no output) only when
// the epoch's start edge was published, so every published start is paired
// (subagent-contract.md §2.3: no end for an unpublished start edge).
func (c *Continuations) rollback(act *activation) {
	if act.started {
		defer func() {
			end := c.lifecycle(act, EventEnd)
			end.StopReason = driver.StopAborted
			c.lc.emit(end)
		}()
	}
	c.mu.Lock()
	if c.acts[act.id] == act {
		delete(c.acts, act.id)
	}
	settleOwner := c.disownLocked(act)
	act.disposing = true
	c.mu.Unlock()
	if err := c.kids.ReleaseChild(context.Background(), act.agent); err != nil {
		c.log.Warn("subagent: rolling back a child failed", "session", act.id, "err", err)
	}
	act.settled(driver.StopAborted, nil)
	act.lease.abandon() // made by this start, or restored by this resume
	c.releaseSlot(act.slotRoot)
	if settleOwner {
		c.idleHook(act.owner)(act.owner.agent)
	}
}

// disownLocked removes act from its owner's children and reports whether
// the owner is left resident without children, so that the caller gives
// it a settlement attempt once act is released: the owner may have gone
// idle while act was owned (a nested start rolled back after its owner's
// turn ended), and no later idle callback would come. Caller holds c.mu.
func (c *Continuations) disownLocked(act *activation) bool {
	owner := act.owner
	if owner == nil {
		return false
	}
	delete(owner.owned, act.id)
	return len(owner.owned) == 0 && !owner.disposing && c.acts[owner.id] == owner
}

// submit delivers msg as one later turn of act's agent, at the final
// admission span (subagent-contract.md §2.4 step 3). Caller holds the
// child lock.
func (c *Continuations) submit(ctx context.Context, act *activation, parent *agent.Agent, msg session.Message) (string, error) {
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if err := c.admit(parent); err != nil {
		return "", err
	}
	c.mu.Lock()
	disposing := act.disposing
	c.mu.Unlock()
	if disposing {
		return "", Errorf(CodeActivationClosing, "subagent %q activation is being disposed; the message was not accepted", act.id)
	}
	if !c.live.exact(parent) {
		return "", Errorf(CodeUnauthorized, "subagent %q delivery requires the exact live parent agent", act.id)
	}
	if act.agent.Session().Header().ParentSession != parent.ID() {
		return "", Errorf(CodeUnauthorized, "subagent %q belongs to another parent session", act.id)
	}
	id, err := act.agent.Followup(msg)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	act.announced = true
	c.mu.Unlock()
	return id, nil
}

// lookupFor is lookup plus whether caller was in the activation's
// materialization-time ancestry (interrupt authority), read under the
// same lock. An activation a scoped drain has cancelled counts as
// disposing: its disposal is open, only not yet reached by the drain
// (subagent-contract.md §2.5 step 4, C103).
func (c *Continuations) lookupFor(id string, caller *agent.Agent) (act *activation, disposing, inAncestry bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	act = c.acts[id]
	if act != nil {
		disposing = act.disposing || act.drained
		inAncestry = act.ancestry[caller]
	}
	return act, disposing, inAncestry
}

// cancel ends the open turn of act's agent with cause (Agent.Cancel). Every
// cancellation the runtime issues to an activation goes through it.
func (c *Continuations) cancel(act *activation, cause session.AbortReason, keepInbox bool) {
	if c.cancelled != nil {
		c.cancelled(act.id, cause, keepInbox)
	}
	act.agent.Cancel(cause, keepInbox)
}
