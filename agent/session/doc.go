// Package session owns the session vocabulary of acp-agent: the immutable
// session header, the append-only event log with its typed payloads and
// validation, the repair of a turn a crash left open
// (CloseInterruptedTurn: the closing tool/result, step/end and turn/end
// events), the live in-memory session store (create, get, list, fork,
// remove) and the deterministic sources of ids and time.
//
// Layering: session imports only the standard library and
// github.com/google/uuid. Everything else (persistence, the agent loop, the
// subagent runtime, the ACP adapter) builds on it; session must never
// import any other package of this module (internal/layering enforces
// this). Durable storage is reached through the Persister interface
// declared here (Open, Appended, Release) and implemented by package
// persistence; it is the live store's only way to storage.
//
// Concurrency: a *Session is safe for concurrent use. Appends are serialized
// per session; observers registered with Subscribe or Store.Observe are called
// synchronously, in seq order, while the append lock is held, so they see a
// total order and must be quick and must not append to the same session.
// Events handed out are immutable by convention: never mutate an Event or its
// Data after it was appended.
//
// Bounded memory (view.go): a session of a store whose Persister is also a
// Reader keeps in memory the events its file does not hold yet and a
// recent tail of at most Store.SetResidentBytes payload bytes (64 KiB by
// default), never fewer than the last event; Evict drops the rest at once
// (after a load's replay). Every reader of the whole log (Events,
// EventsFrom, EventsView, SubscribeFrom) reads the evicted part back and
// returns an error if it cannot; MustEvents is the panicking form for
// tests. What the next model request needs is the agent's own cached view,
// not the session's log.
//
// Compaction is a log-only session/compaction event (compaction.go):
// History replaces the messages it covers by its summary and stubs old
// tool results, while the log keeps every original event for replay.
//
// The log is the only authority. Everything derived from it (model history,
// projections, titles) is recomputed from events; see
// ../shared/spec/subagent-contract.md §1.1–1.3 and §7.
package session
