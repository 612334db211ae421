// Package projection folds session event logs into small derived values
// ("projections") that consumers read without replaying a log: the
// subagent identity and timing of a child, the title of a session, and any
// unit a higher layer registers.
//
// A Unit is a pure fold: Init returns the empty state, Apply advances it by
// one event and View turns it into a JSON value. The Registry owns the set of
// registered units and serves two kinds of snapshot:
//
//   - Snapshot(s) for a live *session.Session. After Attach(store) the
//     registry observes the store and keeps each live session's fold state
//     up to date as events are appended, so reading a live snapshot costs no
//     log read and no replay.
//   - Restore(events) for a cold log (read from persistence): every unit is
//     folded from Init over the given events.
//
// A unit that panics or fails on one log poisons only that log's snapshot
// (Snapshot/Restore return an error for it); other sessions are unaffected.
// Projections are derived data: the log stays the only authority (see
// ../shared/spec/subagent-contract.md §1.5).
//
// Layering: projection imports only agent/session and the standard library.
// It must not import agent, subagent, persistence or acp. Packages above it
// register their own units (package subagent registers the identity unit,
// whose descriptor parser lives there).
//
// Concurrency: a *Registry is safe for concurrent use. The store observer
// runs under each session's append lock; it only takes the registry's
// per-session lock and never calls back into the session, so it cannot
// deadlock with readers. Unit implementations must be pure and must not
// retain the event or state values they are given beyond the call.
//
// Ownership: the caller that calls Attach owns the returned detach function
// and calls it when the store is retired. Registry holds no goroutines.
package projection
