package subagent

// This file is the starting state of a background child isolated in a
// worktree (ContinuableSpec.Async): its call has returned, and the child's
// own start (the worktree's checkout, then its session) runs on. It is
// listed as starting, an interrupt or a drain cancels it (killing git's
// process group; its lease removes what was made), and a failure reaches
// the parent as a notice.

import (
	"context"
	"errors"
	"fmt"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// StartingStart is a background start whose child is being made.
type StartingStart struct {
	ID, ParentID, Label string
}

type startingStart struct {
	StartingStart
	cancel context.CancelCauseFunc
}

// errStartInterrupted and errStartDrained are the causes of a cancelled
// start.
var (
	errStartInterrupted = errors.New("the start was interrupted")
	errStartDrained     = errors.New("the agent is shutting down")
)

// addStarting records id as starting and returns the context its start
// runs under (cancelled at once when a drain has begun).
func (c *Continuations) addStarting(id, parentID, label string) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starting == nil {
		c.starting = map[string]*startingStart{}
	}
	c.starting[id] = &startingStart{StartingStart{ID: id, ParentID: parentID, Label: label}, cancel}
	if c.draining {
		cancel(errStartDrained)
	}
	return ctx, cancel
}

// removeStarting forgets id once its start ended.
func (c *Continuations) removeStarting(id string, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	delete(c.starting, id)
	c.mu.Unlock()
	cancel(nil)
}

// cancelStarting cancels the start of id (interruptStarting) or of every
// starting child (id ""), with cause; it reports whether one was found.
func (c *Continuations) cancelStarting(id string, cause error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	found := false
	for k, st := range c.starting {
		if id == "" || k == id {
			st.cancel(cause)
			found = true
		}
	}
	return found
}

// startingOf returns the start of id, if it is starting.
func (c *Continuations) startingOf(id string) (StartingStart, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.starting[id]
	if !ok {
		return StartingStart{}, false
	}
	return st.StartingStart, true
}

// Starting returns parentID's children being started (their worktree
// checked out), for listings.
func (c *Continuations) Starting(parentID string) []StartingStart {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []StartingStart
	for _, st := range c.starting {
		if st.ParentID == parentID {
			out = append(out, st.StartingStart)
		}
	}
	return out
}

// startFailed tells the live parent that child id did not start.
func (c *Continuations) startFailed(parent *agent.Agent, id, label string, err error) {
	c.log.Warn("subagent: a background start failed after its call returned", "child", id, "err", err)
	if c.live.get(parent.ID()) == nil {
		return
	}
	summary := fmt.Sprintf("Background subagent %s (%s) did not start: %v. Nothing of it was kept.", id, label, err)
	msg := session.Message{
		Role:    session.RoleUser,
		Content: []session.Block{session.Text(summary)},
		Source: session.Source{
			Kind: session.SourceSubagentSettled, Form: "notice", Summary: BoundSummary(summary), SenderSessionID: id,
			Stop: "error",
		},
	}
	var serr error
	switch {
	case c.admit(parent) != nil:
		_, serr = parent.Inject(msg)
	case parent.Status() == agent.StatusRunning:
		_, serr = parent.Steer(msg)
	default:
		_, serr = parent.Followup(msg)
	}
	if serr != nil {
		c.log.Warn(fmt.Sprintf("subagent %q start failure notice was not delivered to its parent: %v", id, serr))
	}
}
