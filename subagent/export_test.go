package subagent

import "github.com/acp-agent/acp-agent/agent/session"

// SetDrainBegan installs fn as rt's drain-began hook: Drain calls it once
// admission is closed, before it waits for in-flight work (tests begin a
// drain inside a start and continue the start once admission is closed).
func SetDrainBegan(rt *Runtime, fn func()) { rt.Continuations.drainBegan = fn }

// SetCancelHook installs fn as rt's cancel hook: it is called each time
// the runtime cancels an activation's agent (drains, disposal, interrupts)
// with the child id, the cause and whether the inbox is kept (C103).
func SetCancelHook(rt *Runtime, fn func(id string, cause session.AbortReason, keepInbox bool)) {
	rt.Continuations.cancelled = fn
}

// Owns reports whether parentID's resident activation owns childID's
// (C77: the settlement notice is sent before the ownership release).
func Owns(rt *Runtime, parentID, childID string) bool {
	c := rt.Continuations
	c.mu.Lock()
	defer c.mu.Unlock()
	owner := c.acts[parentID]
	return owner != nil && owner.owned[childID] != nil
}
