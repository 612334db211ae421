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

// SetLockWaiting installs fn as rt's lock-waiting observer: it is called
// with the child id each time a child's lock is taken while another holds
// or awaits it (C25: a follow-up waits behind a disposal). Set it before
// any child starts.
func SetLockWaiting(rt *Runtime, fn func(id string)) { rt.Continuations.lockWaiting = fn }

// SetWorkWaiting installs fn as rt's work-waiting observer: a drain calls
// it when it finds a start, resume or settlement in flight and is about
// to wait for it (C39, C44). Set it before any child starts.
func SetWorkWaiting(rt *Runtime, fn func()) { rt.Continuations.workWaiting = fn }

// SetSettleTried installs fn as rt's settlement observer: it is called
// with the activation's id after each settlement attempt, settled or not.
// Set it before any child starts.
func SetSettleTried(rt *Runtime, fn func(id string)) { rt.Continuations.settleTried = fn }

// WaitSettled waits until no start, resume or settlement attempt is in
// flight. An agent's idle callback schedules its settlement attempt before
// WaitIdle returns, so WaitIdle then WaitSettled observes the attempt's
// outcome (C96).
func WaitSettled(rt *Runtime) { rt.Continuations.waitWork() }
