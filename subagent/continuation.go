package subagent

// This file is the continuation manager: continuable children and their
// Activations (subagent-contract.md §2.3–2.7, §2.10).
//
// An Activation is one residency epoch of a continuable child: its live
// Agent (registered), its live session, the set of continuable children it
// owns and the materialization-time ancestry used for interrupt authority.
// A settled child holds nothing: its Agent is closed and unregistered, its
// session removed from the live store (flushed and unlocked in
// persistence), and its Activation dropped. The next send_message
// cold-resumes it from disk.
//
// Locking: rt.cont.mu guards the activation table and every activation's
// mutable fields; it is never held while calling into an Agent. A per-child
// lock (childLocks) serializes materialization, submission and disposal of
// one child; lock order is parent before child. Settlement runs on a
// short-lived goroutine started from the child's OnIdle callback (the
// callback runs on the agent's loop goroutine, which Close waits for);
// rt.cont.work counts those goroutines and in-flight materializations so
// that drains can wait for them.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// ContinuableSpec is a continuable start (subagent-contract.md §2.3).
type ContinuableSpec struct {
	Provider string
	Label    string
	// ChildID reserves the child's id (empty: minted).
	ChildID string
	Prompt  []session.Block
	Parent  *agent.Agent
	// Route overrides the parent's route; the resolved route is recorded
	// in the descriptor and reused on cold resume.
	Route      *model.Route
	MaxTokens  int
	MaxDepth   *int
	ToolFilter *ToolFilter
	Persona    string
}

// Authority is who asks for an interrupt (subagent-contract.md §2.5).
type Authority struct {
	// Kind is "user" or "ancestor".
	Kind string
	// ParentSessionID addresses the durable direct parent (user kind).
	ParentSessionID string
	// Agent is the calling ancestor (ancestor kind).
	Agent *agent.Agent
}

// UserAuthority is an interrupt by the user of parentSessionID.
func UserAuthority(parentSessionID string) Authority {
	return Authority{Kind: "user", ParentSessionID: parentSessionID}
}

// AncestorAuthority is an interrupt by a live ancestor agent.
func AncestorAuthority(a *agent.Agent) Authority { return Authority{Kind: "ancestor", Agent: a} }

// Report deliveries.
const (
	DeliveryNextStep = "next-step"
	DeliveryQuiet    = "quiet"
)

type activation struct {
	id       string
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
	announced bool
	// started records that the epoch's subagent/start edge was published,
	// so a rollback must close it with a subagent/end.
	started bool
}

type continuation struct {
	mu         sync.Mutex
	acts       map[string]*activation
	draining   bool
	drainRoots map[string]*agent.Agent

	// work counts settlement goroutines and in-flight materializations.
	work     int
	workDone *sync.Cond

	locksMu sync.Mutex
	locks   map[string]*childLock
}

type childLock struct {
	mu   sync.Mutex
	refs int
}

func (c *continuation) init() {
	c.acts = make(map[string]*activation)
	c.drainRoots = make(map[string]*agent.Agent)
	c.locks = make(map[string]*childLock)
	c.workDone = sync.NewCond(&c.mu)
}

// lockChild takes the per-child lock of id and returns its release.
func (c *continuation) lockChild(id string) (unlock func()) {
	c.locksMu.Lock()
	l := c.locks[id]
	if l == nil {
		l = &childLock{}
		c.locks[id] = l
	}
	l.refs++
	c.locksMu.Unlock()
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

func (c *continuation) beginWork() {
	c.mu.Lock()
	c.work++
	c.mu.Unlock()
}

func (c *continuation) endWork() {
	c.mu.Lock()
	c.work--
	if c.work == 0 {
		c.workDone.Broadcast()
	}
	c.mu.Unlock()
}

// waitWork waits until no settlement or materialization is in flight.
func (c *continuation) waitWork() {
	c.mu.Lock()
	for c.work > 0 {
		c.workDone.Wait()
	}
	c.mu.Unlock()
}

func (rt *Runtime) requireManager() error {
	if rt.opts.Agents == nil {
		return NewError(CodeContinuationUnavailable, "continuable subagents require the agents service")
	}
	return nil
}

// admit reports DRAINING when the manager or a live lineage root of a is
// draining.
func (rt *Runtime) admit(a *agent.Agent) error {
	c := &rt.cont
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
			if rt.live(id) == root {
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
		cur = rt.live(parent)
	}
	return nil
}

// live returns the registered agent id, or nil.
func (rt *Runtime) live(id string) *agent.Agent {
	if rt.opts.Agents == nil || id == "" {
		return nil
	}
	a, _ := rt.opts.Agents.Get(id)
	return a
}

// exactLive reports whether a is the registry's current entry for its id.
func (rt *Runtime) exactLive(a *agent.Agent) bool {
	return a != nil && rt.live(a.ID()) == a
}

// ancestryOf returns a and every live ancestor reachable through
// parentSession in the agent registry.
func (rt *Runtime) ancestryOf(a *agent.Agent) map[*agent.Agent]bool {
	out := map[*agent.Agent]bool{}
	seen := map[string]bool{}
	for cur := a; cur != nil && !seen[cur.ID()]; {
		seen[cur.ID()] = true
		out[cur] = true
		p := cur.Session().Header().ParentSession
		if p == "" {
			break
		}
		cur = rt.live(p)
	}
	return out
}

// StartContinuable starts a continuable child and returns once its prompt
// was accepted into the child's inbox (subagent-contract.md §2.3).
func (rt *Runtime) StartContinuable(ctx context.Context, spec ContinuableSpec) (childID, messageID string, err error) {
	if err := rt.requireManager(); err != nil {
		return "", "", err
	}
	parent := spec.Parent
	if parent == nil {
		return "", "", NewError(CodeInvalidRequest, "continuable subagent request has no parent agent")
	}
	if err := rt.admit(parent); err != nil {
		return "", "", err
	}
	if rt.opts.Durable == nil {
		return "", "", NewError(CodePersistenceUnavailable, "continuable subagents require session persistence (load a dsh-session-persistence backend)")
	}
	if err := ValidateMaxDepth(spec.MaxDepth); err != nil {
		return "", "", err
	}
	childID = spec.ChildID
	if childID == "" {
		childID = parent.Session().NewID()
	}
	if err := rt.checkAbsent(childID); err != nil {
		return "", "", err
	}
	depth, err := ChildDepth(parent, spec.MaxDepth)
	if err != nil {
		return "", "", err
	}
	route := ResolveRoute(parent, spec.Route)
	desc := Descriptor{
		Version: DescriptorVersion, Mode: ModeContinuable, Provider: spec.Provider, Label: spec.Label,
		AgentProvider: route.Provider, AgentModel: route.Model, Persona: spec.Persona, ToolFilter: spec.ToolFilter,
	}
	descData, err := desc.Snapshot()
	if err != nil {
		return "", "", err
	}
	p, ok := rt.GetProvider(spec.Provider)
	if !ok {
		return "", "", Errorf(CodeNoProvider, "no subagent provider registered for %q", spec.Provider)
	}
	cp, ok := p.(ContinuableProvider)
	if !ok {
		return "", "", Errorf(CodeUnsupportedCapability, "subagent provider %q does not support continuable children (no prepareContinuable capability)", spec.Provider)
	}
	prefix, err := cp.PrepareContinuable(ctx, ContinuableRequest{Parent: parent, Label: spec.Label})
	if err != nil {
		return "", "", err
	}
	if ctx.Err() != nil {
		return "", "", context.Cause(ctx)
	}
	if err := rt.admit(parent); err != nil {
		return "", "", err
	}

	rt.cont.beginWork()
	defer rt.cont.endWork()
	unlock := rt.cont.lockChild(childID)
	defer unlock()
	if ctx.Err() != nil {
		return "", "", context.Cause(ctx)
	}
	if err := rt.admit(parent); err != nil {
		return "", "", err
	}
	if err := rt.checkAbsent(childID); err != nil {
		return "", "", err
	}
	if spec.ChildID != "" {
		entries, err := rt.opts.Durable.List(ctx)
		if err != nil {
			return "", "", err
		}
		for _, e := range entries {
			if e.Header.ID == childID {
				return "", "", Errorf(CodeDuplicateChild, "subagent %q already exists", childID)
			}
		}
	}

	h := ChildHeader(parent, childID, depth, len(prefix))
	seed := creationSeed(rt.opts.Sessions, childID, prefix, descData)
	spec2 := ChildSpec{
		Mode: ModeContinuable, Label: spec.Label, Route: route, MaxTokens: spec.MaxTokens,
		Persona: spec.Persona, ToolFilter: spec.ToolFilter, Depth: depth, Parent: parent, Fresh: true,
	}
	act := &activation{id: childID, provider: spec.Provider, parentID: parent.ID(), depth: depth}
	spec2.OnIdle = rt.idleHook(act)
	child, err := rt.CreateChild(h, seed, spec2)
	if err != nil {
		return "", "", err
	}
	act.agent = child
	if err := rt.install(ctx, act, parent); err != nil {
		rt.rollback(act)
		return "", "", err
	}
	msgID, err := rt.submit(ctx, act, parent, session.Message{
		Role: session.RoleUser, Content: spec.Prompt, Source: session.Source{Kind: session.SourceUser},
	})
	if err != nil {
		rt.rollback(act)
		return "", "", err
	}
	return childID, msgID, nil
}

// creationSeed stages a continuable child's seed: the provider prefix (plus
// its end-seed marker), then the descriptor. Store.Create appends the
// final session/end-seed after it (subagent-contract.md §1.4, §6 item 21).
func creationSeed(st *session.Store, childID string, prefix []session.Event, desc []byte) []session.Event {
	clock, _ := st.Sources().For(childID)
	seed := slices.Clone(prefix)
	if n := len(seed); n > 0 && seed[n-1].Type != session.TypeEndSeed {
		seed = append(seed, session.Event{Type: session.TypeEndSeed, Seq: int64(n), Time: clock.Now(), Data: []byte("{}")})
	}
	return append(seed, session.Event{Type: session.TypeDescriptor, Seq: int64(len(seed)), Time: clock.Now(), Data: desc})
}

func (rt *Runtime) checkAbsent(id string) error {
	_, live := rt.opts.Sessions.Get(id)
	if live || rt.live(id) != nil {
		return Errorf(CodeDuplicateChild, "subagent %q already exists", id)
	}
	return nil
}

// idleHook returns the OnIdle callback of act's agent: it schedules a
// settlement attempt off the loop goroutine.
func (rt *Runtime) idleHook(act *activation) func(*agent.Agent) {
	return func(*agent.Agent) {
		rt.cont.beginWork()
		go func() {
			defer rt.cont.endWork()
			rt.trySettle(act)
		}()
	}
}

// install records act as resident, owned by the parent's activation when
// there is one, and publishes the start edge.
func (rt *Runtime) install(ctx context.Context, act *activation, parent *agent.Agent) error {
	c := &rt.cont
	act.ancestry = rt.ancestryOf(parent)
	act.ancestry[act.agent] = true
	act.owned = map[string]*activation{}
	act.startSeq = act.agent.Session().Len()
	act.runID = rt.opts.NewRunID()
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
	if err := rt.admit(parent); err != nil {
		return err
	}
	act.started = true
	rt.emit(rt.lifecycle(act, EventStart))
	return nil
}

func (rt *Runtime) lifecycle(act *activation, typ string) LifecycleEvent {
	return LifecycleEvent{
		Type: typ, RunID: act.runID, Provider: act.provider, ID: act.id, ParentID: act.parentID,
		Mode: ModeContinuable, Depth: act.depth, Local: true,
	}
}

// rollback undoes a start or resume that failed before acceptance: no
// notice, and a subagent/end (stop reason aborted, no output) only when
// the epoch's start edge was published, so every published start is paired
// (subagent-contract.md §2.3: no end for an unpublished start edge).
func (rt *Runtime) rollback(act *activation) {
	if act.started {
		defer func() {
			end := rt.lifecycle(act, EventEnd)
			end.StopReason = StopAborted
			rt.emit(end)
		}()
	}
	c := &rt.cont
	c.mu.Lock()
	if c.acts[act.id] == act {
		delete(c.acts, act.id)
	}
	if act.owner != nil {
		delete(act.owner.owned, act.id)
	}
	act.disposing = true
	c.mu.Unlock()
	if err := rt.ReleaseChild(context.Background(), act.agent); err != nil {
		rt.log.Warn("subagent: rolling back a child failed", "session", act.id, "err", err)
	}
}

// submit delivers msg as one later turn of act's agent, at the final
// admission span (subagent-contract.md §2.4 step 3). Caller holds the
// child lock.
func (rt *Runtime) submit(ctx context.Context, act *activation, parent *agent.Agent, msg session.Message) (string, error) {
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if err := rt.admit(parent); err != nil {
		return "", err
	}
	c := &rt.cont
	c.mu.Lock()
	disposing := act.disposing
	c.mu.Unlock()
	if disposing {
		return "", Errorf(CodeActivationClosing, "subagent %q activation is being disposed; the message was not accepted", act.id)
	}
	if !rt.exactLive(parent) {
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

// Followup delivers content to a continuable child as one later turn,
// cold-resuming it from persistence when it is not resident
// (subagent-contract.md §2.4). source defaults to the coordinator relay
// of parent.
func (rt *Runtime) Followup(ctx context.Context, parent *agent.Agent, childID string, content []session.Block) (string, error) {
	if err := rt.requireManager(); err != nil {
		return "", err
	}
	if parent == nil {
		return "", NewError(CodeInvalidRequest, "a follow-up needs a parent agent")
	}
	return rt.FollowupFrom(ctx, parent, childID, content, session.Source{
		Kind: session.SourceCoordinator, Form: "relay", SenderSessionID: parent.ID(),
	})
}

// FollowupFrom is Followup with an explicit message source (the source
// grants no authority).
func (rt *Runtime) FollowupFrom(ctx context.Context, parent *agent.Agent, childID string, content []session.Block, src session.Source) (string, error) {
	if err := rt.requireManager(); err != nil {
		return "", err
	}
	if parent == nil {
		return "", NewError(CodeInvalidRequest, "a follow-up needs a parent agent")
	}
	if err := rt.admit(parent); err != nil {
		return "", err
	}
	msg := session.Message{Role: session.RoleUser, Content: content, Source: src}
	rt.cont.beginWork()
	defer rt.cont.endWork()
	unlock := rt.cont.lockChild(childID)
	defer unlock()
	c := &rt.cont
	c.mu.Lock()
	act := c.acts[childID]
	c.mu.Unlock()
	if act != nil {
		return rt.submit(ctx, act, parent, msg)
	}
	act, err := rt.resume(ctx, parent, childID)
	if err != nil {
		return "", err
	}
	id, err := rt.submit(ctx, act, parent, msg)
	if err != nil {
		rt.rollback(act)
		return "", err
	}
	return id, nil
}

func unavailable(childID string, cause error) error {
	return &SubagentError{Code: CodeNotResumable, Message: fmt.Sprintf("subagent %q is unavailable", childID), Err: cause}
}

// resume materializes a cold continuable child (subagent-contract.md §2.4
// step 2, no Activation). Caller holds the child lock.
func (rt *Runtime) resume(ctx context.Context, parent *agent.Agent, childID string) (*activation, error) {
	if rt.opts.Durable == nil {
		return nil, NewError(CodePersistenceUnavailable, "continuable subagents require session persistence (load a dsh-session-persistence backend)")
	}
	var (
		h      session.Header
		events []session.Event
	)
	s, live := rt.opts.Sessions.Get(childID)
	if live {
		h, events = s.Header(), s.Events()
	} else {
		var err error
		h, events, err = rt.opts.Durable.Inspect(ctx, childID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, unavailable(childID, err)
		}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if err := rt.admit(parent); err != nil {
		return nil, err
	}
	if !rt.exactLive(parent) {
		return nil, Errorf(CodeUnauthorized, "subagent %q delivery requires the exact live parent agent", childID)
	}
	if h.ParentSession != parent.ID() {
		return nil, Errorf(CodeUnauthorized, "subagent %q belongs to another parent session", childID)
	}
	own := events
	if h.SeedLength <= len(events) {
		own = events[h.SeedLength:]
	}
	desc, err := FoldFirst(own)
	if err != nil {
		return nil, err // a malformed own descriptor propagates as-is (§6 item 3)
	}
	if desc == nil || desc.Mode != ModeContinuable {
		return nil, Errorf(CodeNotResumable, "subagent %q has no supported continuation state and cannot be resumed; do not retry send_message with this id", childID)
	}
	if live || rt.live(childID) != nil {
		return nil, Errorf(CodeDuplicateChild, "subagent %q is live outside the continuation manager; the message was not accepted", childID)
	}
	h, events, err = rt.opts.Durable.Load(ctx, childID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(err, ErrSessionLocked) {
			return nil, &SubagentError{Code: CodeSessionLocked, Message: fmt.Sprintf("subagent %q is held by another process; the message was not accepted", childID), Err: err}
		}
		return nil, unavailable(childID, err)
	}
	s, err = rt.opts.Sessions.Adopt(h, events)
	if err != nil {
		if rerr := rt.opts.Durable.Release(childID); rerr != nil {
			rt.log.Warn("subagent: releasing a child after a failed adoption failed", "session", childID, "err", rerr)
		}
		return nil, unavailable(childID, err)
	}
	act := &activation{id: childID, provider: desc.Provider, parentID: parent.ID(), depth: h.DelegationDepth}
	spec := ChildSpec{
		Mode: ModeContinuable, Label: desc.Label,
		Route:   model.Route{Provider: desc.AgentProvider, Model: desc.AgentModel},
		Persona: desc.Persona, ToolFilter: desc.ToolFilter, Depth: h.DelegationDepth, Parent: parent,
		OnIdle: rt.idleHook(act),
	}
	child, err := rt.buildAgent(s, spec)
	if err != nil {
		var se *SubagentError
		if errors.As(err, &se) || ctx.Err() != nil {
			return nil, err
		}
		return nil, unavailable(childID, err)
	}
	act.agent = child
	if err := rt.install(ctx, act, parent); err != nil {
		rt.rollback(act)
		return nil, err
	}
	return act, nil
}

// quiescent reports whether a has no work: idle and nothing parked.
func quiescent(a *agent.Agent) bool {
	return a.Status() == agent.StatusIdle && a.ParkedCount() == 0
}

// trySettle disposes act if it is quiescent and owns no resident child.
func (rt *Runtime) trySettle(act *activation) {
	unlock := rt.cont.lockChild(act.id)
	defer unlock()
	c := &rt.cont
	c.mu.Lock()
	if c.acts[act.id] != act || act.disposing || len(act.owned) > 0 {
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
	if err := rt.dispose(act, false); err != nil {
		rt.log.Warn(fmt.Sprintf("subagent %q activation teardown failed: %v", act.id, err))
	}
}

// disposeTree disposes act (cancelling its turn) after its owned children.
// It takes act's child lock.
func (rt *Runtime) disposeTree(act *activation) error {
	unlock := rt.cont.lockChild(act.id)
	defer unlock()
	c := &rt.cont
	c.mu.Lock()
	if c.acts[act.id] != act || act.disposing {
		c.mu.Unlock()
		return nil
	}
	act.disposing = true
	c.mu.Unlock()
	return rt.dispose(act, true)
}

// dispose tears act down (subagent-contract.md §2.7 "Disposal of one
// Activation"). Caller holds act's child lock and has set disposing.
func (rt *Runtime) dispose(act *activation, cancel bool) error {
	ctx := context.Background()
	c := &rt.cont
	a := act.agent
	if cancel {
		a.Cancel(session.AbortReason{Kind: "parent"}, false)
	}
	var errs []error
	c.mu.Lock()
	owned := slices.Collect(maps.Values(act.owned))
	c.mu.Unlock()
	slices.SortFunc(owned, func(x, y *activation) int { return strings.Compare(x.id, y.id) })
	for _, child := range owned {
		if err := rt.disposeTree(child); err != nil {
			errs = append(errs, fmt.Errorf("subagent %q child teardown failed: %w", act.id, err))
		}
	}
	if err := a.WaitIdle(ctx); err != nil && !errors.Is(err, agent.ErrClosed) {
		errs = append(errs, err)
	}
	if d := rt.opts.Durable; d != nil {
		if err := d.Flush(ctx, act.id); err != nil {
			rt.log.Warn(fmt.Sprintf("subagent %q best-effort final session flush failed; the persisted state may be unavailable or stale on resume: %v", act.id, err))
		}
	}
	events := a.Session().EventsFrom(act.startSeq)
	stop := EpochStopReason(events)
	output := agent.FinalOutput(events)
	if err := rt.ReleaseChild(ctx, a); err != nil {
		errs = append(errs, fmt.Errorf("subagent %q activation handle disposal failed: %w", act.id, err))
	}
	if len(errs) > 0 {
		stop, output = StopError, nil
	}
	c.mu.Lock()
	delete(c.acts, act.id)
	announced := act.announced
	owner := act.owner
	c.mu.Unlock()
	if announced {
		rt.notify(act, stop, output)
	}
	if owner != nil {
		c.mu.Lock()
		delete(owner.owned, act.id)
		settleOwner := len(owner.owned) == 0 && !owner.disposing && c.acts[owner.id] == owner
		c.mu.Unlock()
		if settleOwner {
			rt.idleHook(owner)(owner.agent)
		}
	}
	end := rt.lifecycle(act, EventEnd)
	end.StopReason = stop
	if len(output) > 0 {
		end.LastAssistantMessage = output
	}
	rt.emit(end)
	if len(errs) > 0 {
		return &SubagentError{Code: CodeActivationTeardownFailed, Message: fmt.Sprintf("subagent %q activation teardown failed: %v", act.id, errors.Join(errs...)), Err: errors.Join(errs...)}
	}
	return nil
}

// notify sends the settlement notice to act's direct parent when it is
// live (subagent-contract.md §2.10): injected without a wake while the
// parent's lineage drains, otherwise a new turn for an idle parent and the
// next step of a running one.
func (rt *Runtime) notify(act *activation, stop string, output []session.Block) {
	parent := rt.live(act.parentID)
	if parent == nil {
		return
	}
	msg := SettlementNotice(act.id, stop, output)
	var err error
	switch {
	case rt.admit(parent) != nil:
		_, err = parent.Inject(msg)
	case parent.Status() == agent.StatusRunning:
		_, err = parent.Steer(msg)
	default:
		_, err = parent.Followup(msg)
	}
	if err != nil {
		rt.log.Warn(fmt.Sprintf("subagent %q settlement notice was not delivered to its parent: %v", act.id, err))
	}
}

// Interrupt stops the current turn of a resident continuable child,
// keeping its queued messages parked (subagent-contract.md §2.5). An
// absent, one-shot or settled target is an accepted no-op.
func (rt *Runtime) Interrupt(targetID string, auth Authority) error {
	if rt.opts.Agents == nil {
		return nil
	}
	cause := session.AbortReason{Kind: "user"}
	if auth.Kind == "ancestor" {
		caller := auth.Agent
		if !rt.exactLive(caller) {
			return Errorf(CodeUnauthorized, "interrupting %q requires the exact live ancestor agent", targetID)
		}
		if caller.ID() == targetID {
			return Errorf(CodeUnauthorized, "agent %q cannot interrupt itself", caller.ID())
		}
		cause = session.AbortReason{Kind: "parent"}
	}
	c := &rt.cont
	c.mu.Lock()
	act := c.acts[targetID]
	var disposing bool
	var inAncestry bool
	if act != nil {
		disposing = act.disposing
		inAncestry = act.ancestry[auth.Agent]
	}
	c.mu.Unlock()
	if act == nil {
		return nil
	}
	if auth.Kind == "ancestor" {
		if !inAncestry {
			return Errorf(CodeUnauthorized, "subagent %q is not a live descendant of agent %q", targetID, auth.Agent.ID())
		}
	} else if act.agent.Session().Header().ParentSession != auth.ParentSessionID {
		return Errorf(CodeUnauthorized, "subagent %q belongs to another parent session", targetID)
	}
	if disposing {
		return nil
	}
	act.agent.Cancel(cause, true)
	return nil
}

// Report delivers a continuable child's report to its live direct parent
// (subagent-contract.md §2.6) and returns the parent-side message id.
func (rt *Runtime) Report(ctx context.Context, child *agent.Agent, content []session.Block, delivery string) (string, error) {
	if err := rt.requireManager(); err != nil {
		return "", err
	}
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if err := rt.admit(child); err != nil {
		return "", err
	}
	c := &rt.cont
	c.mu.Lock()
	act := c.acts[child.ID()]
	var disposing bool
	if act != nil {
		disposing = act.disposing
	}
	c.mu.Unlock()
	if act == nil || act.agent != child {
		return "", Errorf(CodeUnauthorized, "agent %q is not a live continuable subagent and cannot report", child.ID())
	}
	if disposing {
		return "", Errorf(CodeActivationClosing, "subagent %q activation is being disposed; the report was not accepted", child.ID())
	}
	parent := rt.live(child.Session().Header().ParentSession)
	if parent == nil {
		return "", NewError(CodeParentUnavailable, "direct parent is not live; report was not delivered")
	}
	msg := ReportMessage(child.ID(), content)
	var (
		id  string
		err error
	)
	if delivery == DeliveryQuiet {
		id, err = parent.Inject(msg)
	} else {
		id, err = parent.Steer(msg)
	}
	if err != nil {
		return "", &SubagentError{Code: CodeParentUnavailable, Message: "direct parent rejected the report: " + err.Error(), Err: err}
	}
	return id, nil
}

// Drain closes admission for the whole manager, waits for in-flight
// materializations and disposes every resident activation child-first,
// flushing each child (subagent-contract.md §2.7, manager-wide drain).
// Notices go to live parents by injection (no new turn).
func (rt *Runtime) Drain(ctx context.Context) error {
	c := &rt.cont
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	return rt.drainWhere(ctx, func(*activation) bool { return true }, "activation(s)")
}

// DrainDescendants closes admission below each exact live root and
// disposes the roots' strict descendant activations child-first. Stale
// roots (not the registry's current entry) are ignored.
func (rt *Runtime) DrainDescendants(ctx context.Context, roots ...*agent.Agent) error {
	if rt.opts.Agents == nil {
		return nil
	}
	c := &rt.cont
	var live []*agent.Agent
	c.mu.Lock()
	for _, r := range roots {
		if rt.exactLive(r) {
			c.drainRoots[r.ID()] = r
			live = append(live, r)
		}
	}
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
			targets = append(targets, act)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(targets, func(x, y *activation) int { return x.depth - y.depth })
	for _, act := range targets {
		act.agent.Cancel(session.AbortReason{Kind: "parent"}, false)
	}
	return rt.drainWhere(ctx, below, "scoped activation(s)")
}

func (rt *Runtime) drainWhere(ctx context.Context, match func(*activation) bool, noun string) error {
	c := &rt.cont
	var errs []error
	for {
		// Wait for materializations and settlements in flight, then take
		// down the topmost matching activations; repeat until none is left
		// (a settlement may have released an owner meanwhile).
		c.waitWork()
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
		if len(tops) == 0 {
			break
		}
		slices.SortFunc(tops, func(x, y *activation) int { return strings.Compare(x.id, y.id) })
		for _, act := range tops {
			if err := rt.disposeTree(act); err != nil {
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
		return &SubagentError{Code: CodeActivationTeardownFailed, Message: fmt.Sprintf("continuable subagent teardown failed for %d %s: %v", len(errs), noun, joined), Err: joined}
	}
	return nil
}

// Resident reports whether childID has a resident activation.
func (rt *Runtime) Resident(childID string) bool {
	c := &rt.cont
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acts[childID] != nil
}

// ResidentCount returns the number of resident activations.
func (rt *Runtime) ResidentCount() int {
	c := &rt.cont
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acts)
}
