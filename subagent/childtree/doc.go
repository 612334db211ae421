// Package childtree follows the whole tree of subagent sessions below the
// sessions a connection serves, and tells what happens to each child as
// domain events (Event): it is opened, it is announced (its delegation is
// known: title, task, cwd, capabilities), its own session events, its
// state (running, idle, settled) and the messages between it and its
// parent. The ACP adapter (package acp) only encodes these events; what a
// child is and when it counts as announced is decided here, next to the
// subagent runtime that creates the children.
//
// Layer: below acp, beside the subagent runtime. It reads the live session
// store only (agent/session's Observer) and the delegation names
// (agent/delegation): it must not import the subagent runtime, its
// drivers, persistence, acp or the composition, so acp can use it without
// depending on the runtime (internal/layering).
//
// Concurrency: a Watcher's store observer runs under each session's append
// lock, so the emit callback it is given must only queue. The callbacks of
// one child come in its log's order. Follow starts a Watcher and Stop ends
// it; the one who called Follow owns it.
package childtree
