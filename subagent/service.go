package subagent

// This file defines Service: one-shot starts (subagent-contract.md §2.2),
// continuable starts (§2.3), follow-ups (§2.4, cold resume in resume.go),
// interrupts (§2.5) and reports (§2.6). Every child start goes through a
// driver and the driver.Host the Service binds to it (children.go).

import (
	"context"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// OneShotRequest is a one-shot delegation (subagent-contract.md §2.2).
type OneShotRequest struct {
	Label string
	// CallID is the parent's delegation tool call (Descriptor.CallID).
	CallID string
	Prompt []session.Block
	Parent *agent.Agent
	// Route overrides the parent's model route (nil: inherit).
	Route *model.Route
	// MaxTokens overrides the parent's limit (0: inherit).
	MaxTokens int
	// MaxDepth caps the child's delegation depth (nil: no cap).
	MaxDepth   *int
	ToolFilter *ToolFilter
	Persona    string
	// MaxSteps bounds the model requests of the child's turn (0: the
	// factory's default); an agent definition's maxTurns.
	MaxSteps int
	// Definition, when set, is recorded in the child's log (definition.go).
	Definition *AgentDefinition
	// Limits bound the child (spend.go); Limits.MaxTurns narrows MaxSteps.
	Limits budgets.Limits
	// Isolation is where the child works: IsolationWorktree starts it in a
	// git worktree of its own, created and recorded in its descriptor
	// (staged in its creation seed) before its first turn; the caller
	// settles it after disposing the run (Service.SettleWorktree).
	Isolation Isolation
	// PermissionMode is the session mode the child's permission decisions
	// use ("" follows the root session's) and PermissionScope who wrote
	// the definition it comes from (policy.GrantProject, GrantUser): both
	// recorded in the descriptor (Descriptor.PermissionMode).
	PermissionMode, PermissionScope string
	// OnUpdate, when set, receives every update of the child agent from
	// before its prompt is delivered until the run is disposed (used for
	// tool progress). It runs on the child's loop goroutine: keep it quick.
	OnUpdate func(child *agent.Agent, u agent.Update)
}

// ContinuableSpec is a continuable start (subagent-contract.md §2.3).
type ContinuableSpec struct {
	Provider string
	Label    string
	// CallID is the parent's delegation tool call (Descriptor.CallID).
	CallID string
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
	// Isolation is where the child works: IsolationWorktree starts it in a
	// git worktree of its own ("" or IsolationNone: the parent's tree).
	Isolation Isolation
	// OnQueued, when set, is called once if the start has to wait for a
	// background slot, with its queue position and the running count.
	OnQueued func(position, running int)
	// Async, with IsolationWorktree, returns once the start has its slot:
	// the worktree's checkout and the child's creation go on as the
	// child's own start (listed as starting, cancelled by an interrupt or
	// a drain); a failure reaches the parent as a notice and OnSettled
	// (stop "error"). StartContinuable then returns no message id.
	Async bool
	// MaxSteps bounds the model requests of each of the child's turns (0:
	// the factory's default). Recorded with Definition, so a cold resume
	// keeps it; without a Definition it applies to this activation only.
	MaxSteps int
	// Definition, when set, is recorded in the child's creation seed after
	// its descriptor (definition.go).
	Definition *AgentDefinition
	// Limits bound the child (spend.go): recorded in its creation seed
	// (subagent/limits), so a cold resume keeps them.
	Limits budgets.Limits
	// OnUpdate, when set, receives every update of the child agent of this
	// first activation, from before its prompt is delivered until it
	// settles. It runs under the child's session lock: keep it quick.
	OnUpdate func(child *agent.Agent, u agent.Update)
	// OnSettled, when set, is called once when this first activation
	// settles (or is rolled back: stop aborted), before the settlement
	// notice is sent; what it returns goes with the notice as its digest.
	OnSettled func(stop string, wt *WorktreeOutcome) (digest string)
	// OnReplaced, when set, is called instead of OnSettled when a later
	// watched message (FollowupWatched) takes the watch over while the
	// child is still resident; OnUpdate ends then too.
	OnReplaced func()
	// PermissionMode is the session mode the child's permission decisions
	// use ("" follows the root session's) and PermissionScope who wrote
	// the definition it comes from (policy.GrantProject, GrantUser): both
	// recorded in the descriptor (Descriptor.PermissionMode).
	PermissionMode, PermissionScope string
}

// Depth returns a pointer to n, for OneShotRequest.MaxDepth and
// ContinuableSpec.MaxDepth.
func Depth(n int) *int { return &n }

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

// Service starts children and talks to them: the write side of the
// runtime. It owns no state of its own; activations belong to the
// continuation manager.
type Service struct {
	providers *ProviderRegistry
	cont      *Continuations
	kids      *children
	live      liveAgents
	lc        *Lifecycle
	durable   Durable
	newRunID  func() string
	worktrees Worktrees
	digest    DigestOptions
	// checkRoute refuses a requested route no configured model serves.
	checkRoute func(model.Route) error
}

// CodeModelNotConfigured: the child's model route (from its agent
// definition, or the request) is not served by any model this agent has
// configured; nothing was started.
const CodeModelNotConfigured Code = "MODEL_NOT_CONFIGURED"

// checkRequestedRoute refuses a requested route (override non-nil) whose
// resolved form no configured model serves.
func (s *Service) checkRequestedRoute(override *model.Route, resolved model.Route) error {
	if override == nil || s.checkRoute == nil {
		return nil
	}
	if err := s.checkRoute(resolved); err != nil {
		return wrapError(CodeModelNotConfigured, err.Error(), err)
	}
	return nil
}

// Start starts a one-shot child through the named driver
// (subagent-contract.md §2.2). Every check runs before the driver is
// called; a driver error means no child and no lifecycle events.
func (s *Service) Start(ctx context.Context, providerName string, req OneShotRequest) (*driver.Run, error) {
	run, _, err := s.StartIsolated(ctx, providerName, req)
	return run, err
}

// StartIsolated is Start that also returns the worktree the child works
// in (nil unless req.Isolation is IsolationWorktree). The caller passes
// it to SettleWorktree once the run is disposed. A start that fails
// leaves no worktree behind.
func (s *Service) StartIsolated(ctx context.Context, providerName string, req OneShotRequest) (*driver.Run, *WorktreeRecord, error) {
	p, ok := s.providers.GetProvider(providerName)
	if !ok {
		return nil, nil, Errorf(CodeNoProvider, "no subagent provider registered for %q", providerName)
	}
	if err := checkCapabilities(p, req.MaxDepth != nil, req.ToolFilter != nil, req.Persona != ""); err != nil {
		return nil, nil, err
	}
	if err := validateMaxDepth(req.MaxDepth); err != nil {
		return nil, nil, err
	}
	if req.Parent == nil {
		return nil, nil, NewError(CodeInvalidRequest, "subagent request has no parent agent")
	}
	iso, err := ParseIsolation(string(req.Isolation))
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkRequestedRoute(req.Route, resolveRoute(req.Parent, req.Route)); err != nil {
		return nil, nil, err
	}
	if iso == IsolationWorktree && s.worktrees == nil {
		return nil, nil, NewError(CodeIsolationFailed, "worktree isolation is not available in this agent (no git support wired)")
	}
	desc := Descriptor{Version: DescriptorVersion, Mode: ModeOneShot, Provider: providerName, Label: req.Label,
		PermissionMode: req.PermissionMode, PermissionScope: req.PermissionScope, CallID: req.CallID}
	check := desc
	if iso == IsolationWorktree {
		check.Isolation, check.Worktree = iso, &WorktreeRecord{} // the record is made in CreateChild
	}
	if _, err := check.Snapshot(); err != nil {
		return nil, nil, err
	}
	if req.Definition != nil {
		if _, err := req.Definition.snapshot(); err != nil {
			return nil, nil, err
		}
	}
	host := &oneShotHost{children: s.kids, svc: s, req: req, desc: desc, isolation: iso}
	run, err := p.StartOneShot(ctx, host, driver.Request{Parent: req.Parent, Prompt: req.Prompt, OnUpdate: req.OnUpdate})
	if err != nil {
		host.lease.abandon()
		return nil, nil, err
	}
	s.publishOneShot(run, providerName, req.Parent.ID())
	return run, host.lease.record(), nil
}

// publishOneShot emits run's start edge and, once it settles, its end.
func (s *Service) publishOneShot(run *driver.Run, providerName, parentID string) {
	info := LifecycleEvent{
		RunID: s.newRunID(), Provider: providerName, ID: run.ID, ParentID: parentID,
		Mode: ModeOneShot, Depth: run.Depth, Local: run.LocalAgent != nil,
	}
	start := info
	start.Type = EventStart
	s.lc.emit(start)
	run.Observe(func(res driver.Result, err error) {
		end := info
		end.Type = EventEnd
		if err != nil {
			end.StopReason = driver.StopError
		} else {
			end.StopReason = res.StopReason
			if len(res.Output) > 0 {
				end.LastAssistantMessage = res.Output
			}
		}
		s.lc.emit(end)
	})
}

func checkCapabilities(p driver.Driver, depth, filter, persona bool) error {
	c := p.Capabilities()
	missing := ""
	switch {
	case depth && !c.DepthLimit:
		missing = "depthLimit"
	case filter && !c.ToolFilter:
		missing = "toolFilter"
	case persona && !c.Persona:
		missing = "persona"
	}
	if missing != "" {
		return Errorf(CodeUnsupportedCapability, "subagent provider %q does not support the %q capability", p.Name(), missing)
	}
	return nil
}

func (s *Service) requireManager() error {
	if s.live.reg == nil {
		return NewError(CodeContinuationUnavailable, "continuable subagents require the agents service")
	}
	return nil
}

// continuablePlan is a continuable start resolved before its driver runs.
type continuablePlan struct {
	spec       ContinuableSpec
	childID    string
	depth      int
	route      model.Route
	descriptor []byte
	desc       Descriptor
	driver     driver.Continuable
}

// StartContinuable starts a continuable child and returns once its prompt
// was accepted into the child's inbox (subagent-contract.md §2.3).
func (s *Service) StartContinuable(ctx context.Context, spec ContinuableSpec) (childID, messageID string, err error) {
	plan, err := s.planContinuable(spec)
	if err != nil {
		return "", "", err
	}
	parent := spec.Parent
	// Wait for a background slot before counting as work: a drain must
	// not wait for a queued start, it ends it.
	root := slotRoot(parent)
	q := queuedStart{id: plan.childID, parentID: parent.ID(), label: spec.Label}
	queued := false
	onQueued := func(position, running int) {
		queued = true
		s.cont.recordQueue(parent, TypeQueued, QueuedRecord{SubagentID: plan.childID, Label: spec.Label})
		if spec.OnQueued != nil {
			spec.OnQueued(position, running)
		}
	}
	defer func() {
		// A recorded start that did not start is closed in the log, so a
		// later listing does not take it for one a restart cut off.
		if queued && err != nil {
			s.cont.recordQueue(parent, TypeUnqueued, QueuedRecord{SubagentID: plan.childID, Label: spec.Label, Reason: err.Error()})
		}
	}()
	if err := s.cont.acquireSlot(ctx, root, q, func() error { return s.cont.admit(parent) }, onQueued); err != nil {
		return "", "", err
	}
	if spec.Async && plan.desc.Isolation == IsolationWorktree {
		// The checkout is part of the child's own start: the call returns
		// now, the child shows as starting, and an interrupt or a drain
		// cancels it (git's process group is killed; the lease removes
		// what was made). A failure is told to the parent as a notice.
		s.cont.beginWork() // a drain waits for it, after cancelling it
		sctx, cancel := s.cont.addStarting(plan.childID, parent.ID(), spec.Label)
		go func() {
			defer s.cont.endWork()
			defer s.cont.removeStarting(plan.childID, cancel)
			if _, watched, err := s.finishStart(sctx, spec, plan, root); err != nil {
				s.cont.startFailed(parent, plan.childID, spec.Label, err)
				if !watched && spec.OnSettled != nil {
					spec.OnSettled(driver.StopError, nil)
				}
			}
		}()
		return plan.childID, "", nil
	}
	s.cont.beginWork()
	defer s.cont.endWork()
	msgID, _, err := s.finishStart(ctx, spec, plan, root)
	if err != nil {
		return "", "", err
	}
	return plan.childID, msgID, nil
}

// finishStart creates, installs and prompts a planned continuable child
// whose slot is taken; on failure nothing is left and the slot is given
// back. watched reports whether spec's watch was installed (a rollback
// then ran its OnSettled). Caller holds a work count.
func (s *Service) finishStart(ctx context.Context, spec ContinuableSpec, plan continuablePlan, root string) (msgID string, watched bool, err error) {
	parent := spec.Parent
	unlock := s.cont.lockChild(plan.childID)
	defer unlock()
	act := &activation{id: plan.childID, label: spec.Label, provider: spec.Provider, parentID: parent.ID(), depth: plan.depth, fresh: true, slotRoot: root}
	host := &continuableHost{children: s.kids, svc: s, plan: plan, act: act}
	child, err := plan.driver.StartContinuable(ctx, host, driver.Request{Parent: parent})
	if err != nil {
		act.lease.abandon()
		s.cont.releaseSlot(root)
		return "", false, err
	}
	act.agent = child
	act.onSettled, act.onReplaced = spec.OnSettled, spec.OnReplaced
	if spec.OnUpdate != nil {
		act.unwatch = child.Subscribe(func(u agent.Update) { spec.OnUpdate(child, u) })
	}
	if err := s.cont.install(ctx, act, parent); err != nil {
		s.cont.rollback(act)
		return "", true, err
	}
	msgID, err = s.cont.submit(ctx, act, parent, session.Message{
		Role: session.RoleUser, Content: spec.Prompt, Source: session.Source{Kind: session.SourceUser},
	})
	if err != nil {
		s.cont.rollback(act)
		return "", true, err
	}
	return msgID, true, nil
}

// planContinuable runs every check of a continuable start that needs no
// lock and resolves the child's id, depth, route, descriptor and driver.
func (s *Service) planContinuable(spec ContinuableSpec) (continuablePlan, error) {
	var plan continuablePlan
	if err := s.requireManager(); err != nil {
		return plan, err
	}
	parent := spec.Parent
	if parent == nil {
		return plan, NewError(CodeInvalidRequest, "continuable subagent request has no parent agent")
	}
	if err := s.cont.admit(parent); err != nil {
		return plan, err
	}
	if s.durable == nil {
		return plan, NewError(CodePersistenceUnavailable, "continuable subagents require session persistence (load a dsh-session-persistence backend)")
	}
	if err := validateMaxDepth(spec.MaxDepth); err != nil {
		return plan, err
	}
	plan.spec, plan.childID = spec, spec.ChildID
	if plan.childID == "" {
		plan.childID = parent.Session().NewID()
	}
	if err := s.checkAbsent(plan.childID); err != nil {
		return plan, err
	}
	depth, err := childDepth(parent, spec.MaxDepth)
	if err != nil {
		return plan, err
	}
	plan.depth, plan.route = depth, resolveRoute(parent, spec.Route)
	if err := s.checkRequestedRoute(spec.Route, plan.route); err != nil {
		return plan, err
	}
	iso, err := ParseIsolation(string(spec.Isolation))
	if err != nil {
		return plan, err
	}
	if iso == IsolationWorktree && s.worktrees == nil {
		return plan, NewError(CodeIsolationFailed, "worktree isolation is not available in this agent (no git support wired)")
	}
	desc := Descriptor{
		Version: DescriptorVersion, Mode: ModeContinuable, Provider: spec.Provider, Label: spec.Label,
		AgentProvider: plan.route.Provider, AgentModel: plan.route.Model, Persona: spec.Persona, ToolFilter: spec.ToolFilter,
		PermissionMode: spec.PermissionMode, PermissionScope: spec.PermissionScope, CallID: spec.CallID,
	}
	if iso == IsolationWorktree {
		// The record itself is made under the child lock (CreateChild);
		// a placeholder validates the rest of the descriptor now.
		desc.Isolation, desc.Worktree = iso, &WorktreeRecord{}
	}
	if plan.descriptor, err = desc.Snapshot(); err != nil {
		return plan, err
	}
	plan.desc = desc
	if spec.Definition != nil {
		if _, err := spec.Definition.snapshot(); err != nil {
			return plan, err
		}
	}
	p, ok := s.providers.GetProvider(spec.Provider)
	if !ok {
		return plan, Errorf(CodeNoProvider, "no subagent provider registered for %q", spec.Provider)
	}
	if plan.driver, ok = p.(driver.Continuable); !ok {
		return plan, Errorf(CodeUnsupportedCapability, "subagent provider %q does not support continuable children (no prepareContinuable capability)", spec.Provider)
	}
	return plan, nil
}

// checkCreatable re-checks a planned continuable start under its child
// lock, right before the child's session is created.
func (s *Service) checkCreatable(ctx context.Context, plan continuablePlan) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := s.cont.admit(plan.spec.Parent); err != nil {
		return err
	}
	if err := s.checkAbsent(plan.childID); err != nil {
		return err
	}
	if plan.spec.ChildID == "" {
		return nil
	}
	entries, err := s.durable.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Header.ID == plan.childID {
			return Errorf(CodeDuplicateChild, "subagent %q already exists", plan.childID)
		}
	}
	return nil
}

func (s *Service) checkAbsent(id string) error {
	_, live := s.kids.sessions.Get(id)
	if live || s.live.get(id) != nil {
		return Errorf(CodeDuplicateChild, "subagent %q already exists", id)
	}
	return nil
}

// Followup delivers content to a continuable child as one later turn,
// cold-resuming it from persistence when it is not resident
// (subagent-contract.md §2.4). The source is the coordinator relay of
// parent.
func (s *Service) Followup(ctx context.Context, parent *agent.Agent, childID string, content []session.Block) (string, error) {
	if err := s.requireManager(); err != nil {
		return "", err
	}
	if parent == nil {
		return "", NewError(CodeInvalidRequest, "a follow-up needs a parent agent")
	}
	return s.FollowupFrom(ctx, parent, childID, content, session.Source{
		Kind: session.SourceCoordinator, Form: "relay", SenderSessionID: parent.ID(),
	})
}

// FollowupFrom is Followup with an explicit message source (the source
// grants no authority).
func (s *Service) FollowupFrom(ctx context.Context, parent *agent.Agent, childID string, content []session.Block, src session.Source) (string, error) {
	id, _, err := s.followup(ctx, parent, childID, content, src, nil)
	return id, err
}

// Watch observes one activation of a continuable child: OnUpdate gets
// every update of the child until it settles, OnSettled (see
// ContinuableSpec) is called once when it does, unless a later watched
// message takes the watch over first: OnReplaced is called then.
type Watch struct {
	OnUpdate   func(child *agent.Agent, u agent.Update)
	OnSettled  func(stop string, wt *WorktreeOutcome) (digest string)
	OnReplaced func()
}

// FollowupWatched is Followup that watches the child's activation from
// this message on: one resumed from disk (cold) by it, or one still
// resident, whose earlier watch (its start's, or an earlier message's)
// this one replaces (its OnReplaced is called), so each message's call
// shows the child's work since that message. watched is false when the
// message was not delivered to a watched activation.
func (s *Service) FollowupWatched(ctx context.Context, parent *agent.Agent, childID string, content []session.Block, w *Watch) (id string, watched bool, err error) {
	if parent == nil {
		return "", false, NewError(CodeInvalidRequest, "a follow-up needs a parent agent")
	}
	return s.followup(ctx, parent, childID, content, session.Source{
		Kind: session.SourceCoordinator, Form: "relay", SenderSessionID: parent.ID(),
	}, w)
}

func (s *Service) followup(ctx context.Context, parent *agent.Agent, childID string, content []session.Block, src session.Source, w *Watch) (id string, watched bool, err error) {
	if err := s.requireManager(); err != nil {
		return "", false, err
	}
	if parent == nil {
		return "", false, NewError(CodeInvalidRequest, "a follow-up needs a parent agent")
	}
	if err := s.cont.admit(parent); err != nil {
		return "", false, err
	}
	msg := session.Message{Role: session.RoleUser, Content: content, Source: src}
	// A cold child takes a background slot like a new start: it waits in
	// the same FIFO queue, before counting as work (a drain ends a queued
	// wait rather than waiting for it).
	root := ""
	if act, _ := s.cont.lookup(childID); act == nil {
		if root, err = s.resumeSlot(ctx, parent, childID); err != nil {
			return "", false, err
		}
	}
	s.cont.beginWork()
	defer s.cont.endWork()
	unlock := s.cont.lockChild(childID)
	defer unlock()
	if act, _ := s.cont.lookup(childID); act != nil {
		// Resident after all (resumed meanwhile): it holds its own slot.
		s.cont.releaseSlot(root)
		// The child lock keeps settlement (which runs the watch) out
		// while the watch changes hands.
		if w != nil {
			act.rewatch(w)
		}
		id, err := s.cont.submit(ctx, act, parent, msg)
		if err != nil && w != nil {
			act.unwatchAll()
		}
		return id, err == nil && w != nil, err
	}
	act, err := s.resume(ctx, parent, childID, root)
	if err != nil {
		return "", false, err
	}
	// A resumed activation is watched as a start's first one is (its
	// activation cannot settle before its message is submitted).
	if w != nil {
		watched = true
		act.onSettled, act.onReplaced = w.OnSettled, w.OnReplaced
		if w.OnUpdate != nil {
			child := act.agent
			act.unwatch = child.Subscribe(func(u agent.Update) { w.OnUpdate(child, u) })
		}
	}
	if id, err = s.cont.submit(ctx, act, parent, msg); err != nil {
		s.cont.rollback(act)
		return "", false, err
	}
	return id, watched, nil
}

// resumeSlot takes the background slot a cold resume of childID needs
// and returns the root it was taken from ("": none needed). When the
// resume has to wait, the child is checked first, so a message that
// would be refused is refused at once rather than after the wait.
func (s *Service) resumeSlot(ctx context.Context, parent *agent.Agent, childID string) (string, error) {
	root := slotRoot(parent)
	if root == "" || s.cont.maxBackground <= 0 {
		return "", nil
	}
	q := queuedStart{id: childID, parentID: parent.ID(), resume: true}
	if !s.cont.slotFree(root) {
		desc, _, err := s.resumable(ctx, parent, childID)
		if err != nil {
			return "", err
		}
		q.label = desc.Label
	}
	if err := s.cont.acquireSlot(ctx, root, q, func() error { return s.cont.admit(parent) }, nil); err != nil {
		return "", err
	}
	return root, nil
}

// Interrupt stops the current turn of a resident continuable child,
// keeping its queued messages parked (subagent-contract.md §2.5). An
// absent, one-shot or settled target is an accepted no-op.
func (s *Service) Interrupt(targetID string, auth Authority) error {
	if s.live.reg == nil {
		return nil
	}
	cause := session.AbortReason{Kind: "user"}
	if auth.Kind == "ancestor" {
		caller := auth.Agent
		if !s.live.exact(caller) {
			return Errorf(CodeUnauthorized, "interrupting %q requires the exact live ancestor agent", targetID)
		}
		if caller.ID() == targetID {
			return Errorf(CodeUnauthorized, "agent %q cannot interrupt itself", caller.ID())
		}
		cause = session.AbortReason{Kind: "parent"}
	}
	if st, ok := s.cont.startingOf(targetID); ok {
		// Still being made (its worktree checked out): the start is
		// cancelled, git's process group killed, and nothing is kept.
		owner := auth.ParentSessionID
		if auth.Kind == "ancestor" {
			owner = auth.Agent.ID()
		}
		if st.ParentID != owner {
			return Errorf(CodeUnauthorized, "subagent %q belongs to another parent", targetID)
		}
		s.cont.cancelStarting(targetID, errStartInterrupted)
		return nil
	}
	act, disposing, inAncestry := s.cont.lookupFor(targetID, auth.Agent)
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
		return nil // a drain or disposal already cancelled it (C103)
	}
	s.cont.cancel(act, cause, true)
	return nil
}

// Report delivers a continuable child's report to its live direct parent
// (subagent-contract.md §2.6) and returns the parent-side message id.
func (s *Service) Report(ctx context.Context, child *agent.Agent, content []session.Block, delivery string) (string, error) {
	if err := s.requireManager(); err != nil {
		return "", err
	}
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if err := s.cont.admit(child); err != nil {
		return "", err
	}
	act, disposing := s.cont.lookup(child.ID())
	if act == nil || act.agent != child {
		return "", Errorf(CodeUnauthorized, "agent %q is not a live continuable subagent and cannot report", child.ID())
	}
	if disposing {
		return "", Errorf(CodeActivationClosing, "subagent %q activation is being disposed; the report was not accepted", child.ID())
	}
	parent := s.live.get(child.Session().Header().ParentSession)
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
		return "", wrapError(CodeParentUnavailable, "direct parent rejected the report: "+err.Error(), err)
	}
	return id, nil
}
