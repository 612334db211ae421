// Package inprocess implements the in-process subagent providers: "spawn"
// (a fresh child with an empty history) and "fork" (a child seeded with the
// parent's completed turns). A one-shot child runs as an Agent in this
// process on its own live session; continuable children are created by the
// subagent runtime's continuation manager, which asks the provider only for
// the seed (PrepareContinuable).
//
// Layering: inprocess imports subagent, agent and agent/session. It must not
// import persistence or acp.
//
// Concurrency and ownership: a Run owns its child agent and session until
// Dispose, which closes the agent, unregisters it and removes the session
// from the live store (flushing and unlocking it in persistence). The run
// settles from the child's OnIdle callback, so no goroutine waits on a
// child; cancellation of the Start context is hooked with
// context.AfterFunc and released at Dispose.
package inprocess
