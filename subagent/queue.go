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
// that only its own settlement could free.

import (
	"context"
	"slices"

	"github.com/acp-agent/acp-agent/agent"
)

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
}

type queuedStart struct {
	id, parentID, label string
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

// takeSlot takes a slot of root without waiting (a cold resume: the child
// exists already and its message must not wait behind new starts).
func (c *Continuations) takeSlot(root string) {
	if root == "" || c.maxBackground <= 0 {
		return
	}
	c.mu.Lock()
	c.slots[root]++
	c.mu.Unlock()
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
		out = append(out, QueuedStart{ID: q.id, ParentID: q.parentID, Label: q.label, Position: i + 1})
	}
	return out
}

// RunningBackground returns how many slots of root are taken.
func (c *Continuations) RunningBackground(root string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[root]
}
