package subagent

// This file is the limit on background children: at most MaxBackground
// continuable children of one top-level (root) session are resident at
// once. A start beyond it waits in a FIFO queue of its root, visible to
// listings (Queued) and to its caller (ContinuableSpec.OnQueued), and
// starts when a slot frees. The wait is context-aware: a cancelled queued
// start leaves nothing behind (its child was not created yet).
//
// Only direct children of a top-level session take slots and wait:
// a background child starting its own children must not wait for a slot
// that only its own settlement could free. A cold resume takes a slot
// like a new start and waits in the same queue (issue 49 item 3): a
// message to a settled child does not jump the starts waiting before it.
//
// A start that has to wait is recorded in its parent's log
// (TypeQueued), and one that leaves the queue without starting is
// closed there (TypeUnqueued): a start a restart cut off while it
// waited is then listed as not started, with the reason, instead of
// vanishing (accounted.go).

import (
	"context"
	"slices"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Event types of the queue records in a parent's log (ignorable: an
// older build reads the log without them).
const (
	TypeQueued   = "subagent/queued"
	TypeUnqueued = "subagent/unqueued"
)

// QueuedRecord is the payload of TypeQueued and TypeUnqueued.
type QueuedRecord struct {
	SubagentID string `json:"subagentId"`
	Label      string `json:"label,omitempty"`
	// Reason says why an unqueued start did not start.
	Reason string `json:"reason,omitempty"`
}

// DefaultMaxBackground is the default limit of background children
// resident at once per root session.
const DefaultMaxBackground = 4

// QueuedStart is a continuable start waiting for a slot.
type QueuedStart struct {
	// ID is the id the child will have.
	ID       string
	ParentID string
	Label    string
	// Position is 1 for the next start to run.
	Position int
	// Resume marks a message to an existing (settled) child waiting to
	// resume it, rather than a new start.
	Resume bool
}

type queuedStart struct {
	id, parentID, label string
	resume              bool
}

// slotRoot returns the root session whose slots a child of parent takes,
// or "" when the child takes none (parent is itself a child).
func slotRoot(parent *agent.Agent) string {
	if parent.Session().Header().DelegationDepth != 0 {
		return ""
	}
	return parent.ID()
}

// acquireSlot waits until root has a free slot and q is first in its
// queue, then takes the slot. onQueued runs once if it has to wait, with
// the start's position and the number of running children. It fails when
// ctx ends or admission closes, leaving the queue as it was.
func (c *Continuations) acquireSlot(ctx context.Context, root string, q queuedStart, admit func() error, onQueued func(position, running int)) error {
	if root == "" || c.maxBackground <= 0 {
		return nil
	}
	queued := false
	defer func() {
		if queued {
			c.mu.Lock()
			c.queue[root] = slices.DeleteFunc(c.queue[root], func(x queuedStart) bool { return x.id == q.id })
			if len(c.queue[root]) == 0 {
				delete(c.queue, root)
			}
			c.signalSlots()
			c.mu.Unlock()
		}
	}()
	for {
		if err := admit(); err != nil {
			return err
		}
		c.mu.Lock()
		first := !queued || (len(c.queue[root]) > 0 && c.queue[root][0].id == q.id)
		if first && c.slots[root] < c.maxBackground && (queued || len(c.queue[root]) == 0) {
			c.slots[root]++
			c.mu.Unlock()
			return nil
		}
		if !queued {
			queued = true
			c.queue[root] = append(c.queue[root], q)
			position, running := len(c.queue[root]), c.slots[root]
			c.mu.Unlock()
			if c.onQueued != nil {
				c.onQueued(q.parentID, q.id)
			}
			if onQueued != nil {
				onQueued(position, running)
			}
			continue
		}
		wake := c.slotFreed
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// releaseSlot gives back a slot of root.
func (c *Continuations) releaseSlot(root string) {
	if root == "" || c.maxBackground <= 0 {
		return
	}
	c.mu.Lock()
	if c.slots[root] > 0 {
		c.slots[root]--
	}
	if c.slots[root] == 0 {
		delete(c.slots, root)
	}
	c.signalSlots()
	c.mu.Unlock()
}

// slotFree reports whether a start of root would take a slot at once.
func (c *Continuations) slotFree(root string) bool {
	if root == "" || c.maxBackground <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue[root]) == 0 && c.slots[root] < c.maxBackground
}

// Waiting reports whether id is a start (or resume) waiting for a slot
// in this process (the catalog's Waiting: such a start is not cut off).
func (c *Continuations) Waiting(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.queue {
		for _, x := range q {
			if x.id == id {
				return true
			}
		}
	}
	return false
}

// recordQueue appends a queue record about childID to parent's log. It is
// best effort: a failed record costs only the listing after a restart.
func (c *Continuations) recordQueue(parent *agent.Agent, typ string, rec QueuedRecord) {
	if _, err := parent.Session().Append(typ, rec, session.Ignorable()); err != nil {
		c.log.Warn("subagent: queue record not written", "session", parent.ID(), "type", typ, "subagent", rec.SubagentID, "err", err)
	}
}

// signalSlots wakes every waiter to re-check. Caller holds c.mu.
func (c *Continuations) signalSlots() {
	close(c.slotFreed)
	c.slotFreed = make(chan struct{})
}

// Queued returns the starts of parentID's children waiting for a slot, in
// queue order.
func (c *Continuations) Queued(parentID string) []QueuedStart {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []QueuedStart
	for i, q := range c.queue[parentID] {
		out = append(out, QueuedStart{ID: q.id, ParentID: q.parentID, Label: q.label, Position: i + 1, Resume: q.resume})
	}
	return out
}

// RunningBackground returns how many slots of root are taken.
func (c *Continuations) RunningBackground(root string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[root]
}
