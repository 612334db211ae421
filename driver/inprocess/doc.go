// Package inprocess implements the in-process drivers: "spawn" (a fresh
// child with an empty history) and "fork" (a child seeded with the
// parent's completed turns). Their children run as Agents in this process,
// created and released through the driver.Host the subagent runtime hands
// to each start.
//
// What it owns: the choice of a child's seed, and for a one-shot child its
// run — delivering the prompt, cancelling it when the start's context ends,
// settling it from the child's own log when the child first becomes idle,
// and disposing it. A continuable child is handed back to the host right
// after creation; the host delivers its prompt and owns its activation.
//
// Layering: inprocess imports driver, agent and agent/session only. It must
// not import subagent (it knows its host only as driver.Host), persistence,
// acp or app; internal/layering enforces this.
//
// Concurrency and ownership: a one-shot Run owns its child agent and
// session until Dispose, which closes the agent and releases it through the
// host (unregistering it and removing the session from the live store,
// which flushes and unlocks it in persistence). The run settles from the
// child's OnIdle callback, so no goroutine waits on a child; cancellation
// of the start's context is hooked with context.AfterFunc and released at
// Dispose.
package inprocess
