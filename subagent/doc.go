// Package subagent is the subagent runtime of acp-agent: delegation from a
// parent agent to child agents, each on its own durable session
// (../shared/spec/subagent-contract.md §1.4, §2, §4). It is the host side
// of the driver seam: drivers (driver/inprocess, later a remote one) start
// children through the driver.Host values the runtime hands them.
//
// What it owns, one type per concern (Runtime only composes them):
//   - Service (service.go, resume.go): one-shot starts (Start → a driver's
//     StartOneShot → driver.Run), continuable starts (StartContinuable → a
//     driver's StartContinuable), Followup with cold resume, Interrupt and
//     Report. It resolves a child's id, depth, route and descriptor and
//     binds them to the driver.Host of the start (children.go).
//   - Continuations (continuations.go, settle.go): the continuation
//     manager — the resident Activations, their per-child locks, admission
//     while draining, settlement, the settlement notice, Drain,
//     DrainDescendants and DrainChildren.
//   - Listing (listing.go): the read side, ListChildren/ListDescendants over
//     the Catalog and the live status of list_agents. Every child a
//     parent's log names gets a row (accounted.go), the same in both
//     scopes, also one whose header names another parent; a damaged
//     child's row says what is damaged (the Persisted reader's optional
//     DamageDescriber).
//   - ProviderRegistry and Lifecycle: the registered drivers, the
//     lifecycle listeners (OnLifecycle, contained) and the start-edge
//     publishers (OnPublish, which can fail a continuable start).
//   - worktree isolation (isolation.go, over the git runner of package
//     subagent/worktree, injected as Options.Worktrees; leftover.go
//     settles at load what a killed foreground call left) and the limit of
//     background children per root session with its queue (queue.go),
//   - the delegation tool filter (toolfilter.go, ChildTools: the composition
//     root's child factory applies it),
//   - the durable descriptor (descriptor.go), the catalog and list_agents
//     (catalog.go, list_agents.go), settlement notices (notice.go) and the
//     model-facing tools: subagent, subagent_fork, send_message,
//     interrupt_agent, report (they call the Service).
//
// Layering: subagent imports driver (the seam), agent, agent/session,
// agent/model, agent/tool, agent/projection and the shared leaves
// agent/delegation (its tool names, child-link _meta key and result keys,
// which acp reads back), its own subagent/worktree and internal/errcode (SubagentError embeds the
// module's one typed-error shape). It must not import
// driver/inprocess or any other driver, persistence, acp or app
// (internal/layering enforces this): it declares Durable (what cold resume
// needs), SessionReader, ProjectionCache and CatalogIndex (what listing
// needs) and the composition root adapts persistence.Store and
// persistence/projcache to them, and registers the drivers. The cache and
// the index are derived hints for display: a child's identity from them is
// used for a listing row only, never to authorize an action on the child.
// Child agents are built by an injected AgentFactory.
//
// Durability and residency: a continuable child is resident (an Activation:
// a registered Agent and a live session) only while it has work or owns a
// resident child. When it settles, the runtime sends the settlement notice to
// its live direct parent, closes and unregisters the Agent and removes the
// session from the live store (which flushes it and releases its
// single-writer lock), so a settled child holds no goroutine and no log in
// memory. A later Followup cold-resumes it: Durable.Load (lock + repair),
// session.Store.Adopt, a new Agent from the FIRST descriptor of the child's
// own suffix. A child locked by another process fails with SESSION_LOCKED
// instead of being activated twice. Cold resume needs no driver: the
// descriptor in the child's own log is enough.
//
// Concurrency: Runtime is safe for concurrent use. Settlement is triggered
// by the child's OnIdle callback and runs on a short-lived goroutine (the
// callback runs on the agent's loop goroutine, which Close waits for);
// Drain waits for every such goroutine. Lifecycle listeners run
// synchronously on the goroutine that caused the event.
//
// Extensions to the contract's error catalogue: SESSION_LOCKED (the child
// is held by another writer) and INVALID_REQUEST (malformed request, for
// example a negative maxDepth, where the reference throws a TypeError) and
// START_PUBLICATION_FAILED (a Lifecycle.OnPublish publisher failed a
// continuable start edge: the reference's throwing subagent/start
// dispatch, which Go's contained listeners cannot produce).
// Tool failures of a foreground child carry the tool code
// SUBAGENT_RUN_FAILED.
package subagent
