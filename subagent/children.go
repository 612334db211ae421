package subagent

// This file defines how the runtime materializes and releases child
// agents, and the driver.Host values it hands to drivers
// (subagent-contract.md §2.2, §2.3).

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// children owns the creation and release of child agents: their live
// session, their agent (through the factory) and its registration.
type children struct {
	sessions *session.Store
	agents   *agent.Registry
	factory  AgentFactory
	log      *slog.Logger
	spend    *spending
}

// create creates a child session with header h and seed, builds its agent
// and registers it. On failure nothing stays live.
func (c *children) create(h session.Header, seed []session.Event, spec ChildSpec) (*agent.Agent, error) {
	if c.factory == nil || c.sessions == nil {
		return nil, NewError(CodeInvalidRequest, "subagent runtime has no agent factory or session store")
	}
	s, err := c.sessions.Create(h, session.CreateOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	return c.build(s, spec)
}

// build builds and registers the agent of the live session s.
func (c *children) build(s *session.Session, spec ChildSpec) (*agent.Agent, error) {
	if spec.Limits.MaxTurns > 0 && (spec.MaxSteps == 0 || spec.Limits.MaxTurns < spec.MaxSteps) {
		spec.MaxSteps = spec.Limits.MaxTurns
	}
	if c.spend != nil && spec.Parent != nil {
		spec.Limit = c.spend.childHook(s.ID(), spec.Parent, spec.Limits)
	}
	a, err := c.factory(s, spec)
	if err != nil {
		c.removeSession(s.ID())
		return nil, err
	}
	if c.spend != nil && spec.Parent != nil {
		c.spend.watch(a, spec.Parent.ID())
	}
	if c.agents != nil {
		if err := c.agents.Register(a); err != nil {
			_ = a.Close(context.Background())
			c.removeSession(s.ID())
			return nil, err
		}
	}
	return a, nil
}

func (c *children) removeSession(id string) {
	if err := c.sessions.Remove(id); err != nil {
		c.log.Warn("subagent: releasing child session failed", "session", id, "err", err)
	}
}

// ReleaseChild closes a child agent, unregisters it and removes its session
// from the live store (which flushes and releases it in persistence).
func (c *children) ReleaseChild(ctx context.Context, a *agent.Agent) error {
	closeErr := a.Close(ctx)
	if c.agents != nil {
		c.agents.Unregister(a)
	}
	rmErr := c.sessions.Remove(a.SessionID())
	return errors.Join(closeErr, rmErr)
}

// oneShotHost is the driver.Host of one one-shot start.
type oneShotHost struct {
	*children
	svc       *Service
	req       OneShotRequest
	desc      Descriptor
	isolation Isolation
	// lease owns the child's worktree once CreateChild made it.
	lease *worktreeLease
}

var _ driver.Host = (*oneShotHost)(nil)

// CreateChild mints the child's id in the parent's session, checks the
// depth cap and creates the child with the descriptor hook installed.
func (h *oneShotHost) CreateChild(ctx context.Context, seed []session.Event, onIdle func(*agent.Agent)) (*agent.Agent, error) {
	parent := h.req.Parent
	depth, err := childDepth(parent, h.req.MaxDepth)
	if err != nil {
		return nil, err
	}
	maxTokens := h.req.MaxTokens
	if maxTokens == 0 {
		maxTokens = parent.Options().MaxTokens
	}
	spec := ChildSpec{
		Mode: ModeOneShot, Label: h.req.Label, Route: resolveRoute(parent, h.req.Route),
		MaxTokens: maxTokens, Persona: h.req.Persona, ToolFilter: h.req.ToolFilter, Depth: depth, Parent: parent,
		MaxSteps: h.req.MaxSteps, Definition: h.req.Definition, Limits: h.req.Limits,
		PermissionMode: h.req.PermissionMode, PermissionScope: h.req.PermissionScope,
		Fresh: true, PreStep: []agent.PreStepHook{descriptorHook(h.desc, h.req.Definition)}, OnIdle: onIdle,
	}
	id := parent.Session().NewID()
	hdr := childHeader(parent, id, depth, len(seed))
	if h.isolation == IsolationWorktree {
		// As for a continuable child: the worktree exists before the
		// session, whose creation seed records it in the descriptor
		// (instead of the first turn's hook), and is the child's cwd.
		lease, cwd, err := h.svc.newLease(ctx, parent, id)
		if err != nil {
			return nil, err
		}
		d := h.desc
		d.Isolation, d.Worktree = IsolationWorktree, lease.rec
		raw, err := d.Snapshot()
		if err == nil {
			seed, err = creationSeed(h.sessions, id, seed, raw, h.req.Definition, h.req.Limits)
		}
		if err != nil {
			lease.abandon()
			return nil, err
		}
		hdr.Cwd, spec.PreStep, h.lease = cwd, nil, lease
	}
	a, err := h.create(hdr, seed, spec)
	if err != nil {
		h.lease.abandon()
		h.lease = nil
		return nil, err
	}
	h.lease.recorded()
	return a, nil
}

// continuableHost is the driver.Host of one continuable start. The
// Service holds the child lock while the driver runs.
type continuableHost struct {
	*children
	svc  *Service
	plan continuablePlan
	act  *activation
}

var _ driver.Host = (*continuableHost)(nil)

// CreateChild re-checks admission and the child's absence under the child
// lock, then creates the child with its descriptor staged in its seed.
func (h *continuableHost) CreateChild(ctx context.Context, prefix []session.Event, onIdle func(*agent.Agent)) (*agent.Agent, error) {
	if onIdle != nil {
		return nil, NewError(CodeInvalidRequest, "a continuable child's idle callback belongs to the subagent runtime")
	}
	p := h.plan
	if err := h.svc.checkCreatable(ctx, p); err != nil {
		return nil, err
	}
	hdr := childHeader(p.spec.Parent, p.childID, p.depth, len(prefix))
	desc := p.descriptor
	if p.desc.Isolation == IsolationWorktree {
		// The worktree exists before the child's session, and its record
		// is in the descriptor the session is created with: durable
		// before the first turn, and the child's cwd from the start.
		lease, cwd, err := h.svc.newLease(ctx, p.spec.Parent, p.childID)
		if err != nil {
			return nil, err
		}
		d := p.desc
		d.Worktree = lease.rec
		if desc, err = d.Snapshot(); err != nil {
			lease.abandon()
			return nil, err
		}
		hdr.Cwd = cwd
		h.act.lease, h.act.worktree = lease, lease.rec
	}
	seed, err := creationSeed(h.sessions, p.childID, prefix, desc, p.spec.Definition, p.spec.Limits)
	if err != nil {
		h.act.lease.abandon()
		h.act.lease, h.act.worktree = nil, nil
		return nil, err
	}
	spec := ChildSpec{
		Mode: ModeContinuable, Label: p.spec.Label, Route: p.route, MaxTokens: p.spec.MaxTokens,
		MaxSteps: p.spec.MaxSteps, Definition: p.spec.Definition, Limits: p.spec.Limits,
		PermissionMode: p.spec.PermissionMode, PermissionScope: p.spec.PermissionScope,
		Persona: p.spec.Persona, ToolFilter: p.spec.ToolFilter, Depth: p.depth, Parent: p.spec.Parent, Fresh: true,
		OnIdle: h.svc.cont.idleHook(h.act),
	}
	a, err := h.create(hdr, seed, spec)
	if err != nil {
		h.act.lease.abandon()
		h.act.lease, h.act.worktree = nil, nil
		return nil, err
	}
	h.act.lease.recorded()
	return a, nil
}

// creationSeed stages a continuable child's seed: the driver's prefix (plus
// its end-seed marker), then the descriptor, then the agent definition
// record when there is one. Store.Create appends the final
// session/end-seed after it (subagent-contract.md §1.4, §6 item 21).
func creationSeed(st *session.Store, childID string, prefix []session.Event, desc []byte, def *AgentDefinition, limits budgets.Limits) ([]session.Event, error) {
	clock, _ := st.Sources().For(childID)
	seed := slices.Clone(prefix)
	if n := len(seed); n > 0 && seed[n-1].Type != session.TypeEndSeed {
		seed = append(seed, session.Event{Type: session.TypeEndSeed, Seq: int64(n), Time: clock.Now(), Data: []byte("{}")})
	}
	seed = append(seed, session.Event{Type: session.TypeDescriptor, Seq: int64(len(seed)), Time: clock.Now(), Data: desc})
	if def != nil {
		ev, err := definitionEvent(def, int64(len(seed)), clock.Now())
		if err != nil {
			return nil, err
		}
		seed = append(seed, ev)
	}
	if !limits.Zero() {
		ev, err := limits.Event(int64(len(seed)), clock.Now())
		if err != nil {
			return nil, err
		}
		seed = append(seed, ev)
	}
	return seed, nil
}

// validateMaxDepth checks a requested depth cap.
func validateMaxDepth(maxDepth *int) error {
	if maxDepth != nil && *maxDepth < 0 {
		return NewError(CodeInvalidRequest, "subagent maxDepth must be a non-negative safe integer")
	}
	return nil
}

// childDepth returns the delegation depth of a child of parent: the
// parent's header delegationDepth + 1, checked against maxDepth.
func childDepth(parent *agent.Agent, maxDepth *int) (int, error) {
	if err := validateMaxDepth(maxDepth); err != nil {
		return 0, err
	}
	d := parent.Session().Header().DelegationDepth + 1
	if maxDepth != nil && d > *maxDepth {
		return 0, &SubagentDepthError{AttemptedDepth: d, MaxDepth: *maxDepth}
	}
	return d, nil
}

// resolveRoute returns the child route: the override's fields, else the
// parent's current route (the model its session uses now).
func resolveRoute(parent *agent.Agent, override *model.Route) model.Route {
	r := parent.CurrentRoute()
	if override != nil {
		if override.Provider != "" {
			r.Provider = override.Provider
		}
		if override.Model != "" {
			r.Model = override.Model
		}
	}
	return r
}

// childHeader returns the header of a new child of parent.
func childHeader(parent *agent.Agent, id string, depth, seedLength int) session.Header {
	ph := parent.Session().Header()
	return session.Header{
		ID:              id,
		Cwd:             ph.Cwd,
		ParentSession:   parent.SessionID(),
		SeedLength:      seedLength,
		Origin:          session.OriginSubagent,
		DelegationDepth: depth,
	}
}

// descriptorHook returns the pre-step hook that appends desc (then def's
// record, when set) inside the child's first entered turn
// (subagent-contract.md §1.4, one-shot placement). It must be the last
// hook of the chain.
func descriptorHook(desc Descriptor, def *AgentDefinition) agent.PreStepHook {
	return func(ctx context.Context, a *agent.Agent, step agent.StepInfo) (agent.Decision, error) {
		if !step.FirstEnter {
			return agent.Enter, nil
		}
		data, err := desc.Snapshot()
		if err != nil {
			return agent.Enter, err
		}
		if _, err := a.Session().AppendRaw(session.TypeDescriptor, data); err != nil {
			return agent.Enter, err
		}
		if def != nil {
			rec, err := def.snapshot()
			if err != nil {
				return agent.Enter, err
			}
			if _, err := a.Session().AppendRaw(TypeDefinition, rec, session.Ignorable()); err != nil {
				return agent.Enter, err
			}
		}
		return agent.Enter, nil
	}
}
