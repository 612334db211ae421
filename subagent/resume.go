package subagent

// This file is cold resume: materializing a settled continuable child from
// its own durable log (subagent-contract.md §2.4 step 2).

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

func unavailable(childID string, cause error) error {
	return wrapError(CodeNotResumable, fmt.Sprintf("subagent %q is unavailable", childID), cause)
}

// resume materializes a cold continuable child and installs its
// activation, which holds the background slot of root the caller took
// (resumeSlot; "": none): a failure before the activation exists gives it
// back, one after it is the activation's rollback's. Caller holds the
// child lock.
func (s *Service) resume(ctx context.Context, parent *agent.Agent, childID, root string) (_ *activation, err error) {
	handed := false
	defer func() {
		if !handed {
			s.cont.releaseSlot(root)
		}
	}()
	desc, def, err := s.resumable(ctx, parent, childID)
	if err != nil {
		return nil, err
	}
	var lease *worktreeLease
	if w := desc.Worktree; w != nil {
		// An untouched worktree was removed when the child settled: bring
		// it back (same folder and branch) before the child runs in it. A
		// resume that fails after this ends it again (abandon).
		if lease, err = s.restoreLease(ctx, childID, w); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				lease.abandon()
			}
		}()
	}
	h, events, err := s.durable.Load(ctx, childID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(err, ErrSessionLocked) {
			return nil, wrapError(CodeSessionLocked, fmt.Sprintf("subagent %q is held by another process; the message was not accepted", childID), err)
		}
		return nil, unavailable(childID, err)
	}
	// The limits it was started with (a malformed record: not resumable,
	// rather than run unbounded).
	limits, _, err := budgets.FoldLimits(events[min(max(h.SeedLength, 0), len(events)):])
	if err != nil {
		if rerr := s.durable.Release(childID); rerr != nil {
			s.kids.log.Warn("subagent: releasing a child with malformed limits failed", "session", childID, "err", rerr)
		}
		return nil, unavailable(childID, err)
	}
	sess, err := s.kids.sessions.Adopt(h, events)
	if err != nil {
		if rerr := s.durable.Release(childID); rerr != nil {
			s.kids.log.Warn("subagent: releasing a child after a failed adoption failed", "session", childID, "err", rerr)
		}
		return nil, unavailable(childID, err)
	}
	act := &activation{id: childID, label: desc.Label, provider: desc.Provider, parentID: parent.ID(), depth: h.DelegationDepth, worktree: desc.Worktree, lease: lease}
	spec := ChildSpec{
		Mode: ModeContinuable, Label: desc.Label, Definition: def,
		Route:   model.Route{Provider: desc.AgentProvider, Model: desc.AgentModel},
		Persona: desc.Persona, ToolFilter: desc.ToolFilter, Depth: h.DelegationDepth, Parent: parent,
		PermissionMode: desc.PermissionMode, PermissionScope: desc.PermissionScope,
		OnIdle: s.cont.idleHook(act),
	}
	if def != nil {
		spec.MaxSteps = def.MaxTurns // the limits it was started with, not the file's today
	}
	spec.Limits = limits // as it was started: a cold resume keeps them
	child, err := s.kids.build(sess, spec)
	if err != nil {
		var se *SubagentError
		if errors.As(err, &se) || ctx.Err() != nil {
			return nil, err
		}
		return nil, unavailable(childID, err)
	}
	act.agent = child
	act.slotRoot, handed = root, true
	if err := s.cont.install(ctx, act, parent); err != nil {
		s.cont.rollback(act)
		return nil, err
	}
	return act, nil
}

// resumable reads childID without locking it and returns the descriptor
// (and agent definition record, if any) it resumes from, once parent is
// authorized and the child is neither live nor unsupported.
func (s *Service) resumable(ctx context.Context, parent *agent.Agent, childID string) (*Descriptor, *AgentDefinition, error) {
	if s.durable == nil {
		return nil, nil, NewError(CodePersistenceUnavailable, "continuable subagents require session persistence (load a dsh-session-persistence backend)")
	}
	var (
		h      session.Header
		events []session.Event
	)
	sess, live := s.kids.sessions.Get(childID)
	if live {
		h = sess.Header()
		var err error
		if events, err = sess.Events(); err != nil {
			return nil, nil, unavailable(childID, err)
		}
	} else {
		var err error
		h, events, err = s.durable.Inspect(ctx, childID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, context.Cause(ctx)
			}
			return nil, nil, unavailable(childID, err)
		}
	}
	if ctx.Err() != nil {
		return nil, nil, context.Cause(ctx)
	}
	if err := s.cont.admit(parent); err != nil {
		return nil, nil, err
	}
	if !s.live.exact(parent) {
		return nil, nil, Errorf(CodeUnauthorized, "subagent %q delivery requires the exact live parent agent", childID)
	}
	if h.ParentSession != parent.ID() {
		return nil, nil, Errorf(CodeUnauthorized, "subagent %q belongs to another parent session", childID)
	}
	own := events
	if h.SeedLength <= len(events) {
		own = events[h.SeedLength:]
	}
	desc, err := FoldFirst(own)
	if err != nil {
		return nil, nil, err // a malformed own descriptor propagates as-is (§6 item 3)
	}
	if desc == nil || desc.Mode != ModeContinuable {
		return nil, nil, Errorf(CodeNotResumable, "subagent %q has no supported continuation state and cannot be resumed; do not retry send_message with this id", childID)
	}
	if live || s.live.get(childID) != nil {
		return nil, nil, Errorf(CodeDuplicateChild, "subagent %q is live outside the continuation manager; the message was not accepted", childID)
	}
	def, err := FoldDefinition(own)
	if err != nil {
		return nil, nil, unavailable(childID, err)
	}
	return desc, def, nil
}
