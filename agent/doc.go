// Package agent runs turns on a live session: one Agent per session, with
// an inbox (followup, steer, inject), turns made of steps (pre-step hooks,
// one model call, the tools it asked for), a per-turn step limit,
// cancellation that can keep unclaimed inbox items parked, and subscribers
// that see every event in order. Everything the loop does is recorded on
// the session as events (reference-scenarios.md §d "Common parent prefix"
// items 1, 2, 4 and 6); the log stays the only authority.
//
// Event order of a turn: agent/inbox/spliced (insert, when the message is
// queued) → turn/start → agent/inbox/spliced (next-turn claim) →
// [agent/inbox/spliced next-step claim] → step/start → user/message… →
// session/title (first own turn only) → pre-step hooks → checkpoint →
// assistant/chunk… → assistant/message → (tool/call → checkpoint(call) →
// shown(call) → tool/result)… → step/end → … → turn/end → checkpoint.
//
// Storage: the agent owns no storage. Its one way to its store is the
// Journal it declares (api.go) and the composition root implements over
// persistence and the ACP server: a checkpoint is Journal.SyncTo(id, seq),
// making the log durable up to seq; shown is Journal.Shown(id, seq). The
// events themselves reach storage below the agent, through the live
// store's session.Persister.
//
// Write-ahead: nothing is shown or done that a restart could forget. The
// checkpoint after each tool/call makes the call (and the assistant text
// before it) durable before the tool executes, so an effect of the tool (a
// child session, an edit) never exists without the parent's record of
// asking for it. If that checkpoint fails the tool does not run: the call
// gets a TOOL_NOT_STARTED result and the turn ends with
// CHECKPOINT_FAILED. Subscribers see tool/call before it is durable; a
// subscriber that shows it (the ACP emitter) waits for durability itself.
// Then Journal.Shown lets the composition root wait until the call is on
// the client's wire, so a tool's own messages to the client (a permission
// request) follow the call they are about.
//
// Documented choices:
//   - Caller.Call counts step/start events in the own suffix (after the
//     header's seedLength), so a step rejected by a hook still consumes a
//     script index.
//   - Steering that arrives during the last step of a turn makes the turn
//     take one more step; steering left over by a turn that ended otherwise
//     is delivered in the first step of the next turn.
//   - A reply cut off by the token limit (or a content filter) does not run
//     its tool calls; each gets an error result (TOOL_NOT_STARTED) so the
//     history keeps one result per call. An interrupted partial reply
//     (cancel or model error after some chunks) keeps only its reasoning
//     and text blocks, marked interrupted; the model's view ends it with
//     model.InterruptedNote, or leaves it out when it has no text.
//   - A stream that stalled or was cut (model.ErrStreamBroken) is retried
//     once: the partial reply is recorded interrupted and retried (kept
//     as shown, out of the view), a retry notice is recorded
//     (session/notice, shown from the log live and on replay), and the
//     same request goes out again as another model call (Caller.Call,
//     counted from the record after a restart).
//   - Tool calls run sequentially in the order the model gave them.
//   - Consecutive user messages reach the model as one (model.FromSurface),
//     so a turn that failed before the model answered leaves a well-formed
//     next request; the unanswered message is followed by
//     model.UnansweredNote, so the model knows the earlier request failed.
//   - Long sessions (compaction.go, policy in agent/compact, accounting in
//     agent/budget): before a request that would pass Options.Budget's
//     threshold the loop compacts (first stubs of old tool results, then a
//     model-written summary, script key <key>/compact); a
//     context_length_exceeded answer (model.ErrContextLength) gets one
//     compaction and one retry, which counts as a model call (Caller.Call)
//     here and after a restart; Compact runs /compact as a turn of its own.
//     The session/compaction event is durable before any request uses it;
//     a failed or cancelled compaction is recorded and changes nothing.
//   - A newest turn that alone does not fit (overflow.go): the window a
//     refusal states is learned; the middle of oversized user and tool
//     texts is cut from the model's view with a marked note
//     (compact.Elide; the log keeps the full text), and the cut stays in
//     force for later requests; the learned window is recorded
//     (session/context-window), so after a restart the first request is
//     fitted to it without another refusal (LearnedWindows gives them to
//     a display that does not replay the log); each refused request is
//     recorded as a retried empty reply; when nothing fits the turn ends
//     with CONTEXT_TOO_LONG saying so.
//
// Layering: agent owns the turn loop, the inbox and the agent registry. It
// imports agent/session, agent/model, agent/tool, the context policy
// packages agent/budget and agent/compact, and the standard library only; it must never import persistence, subagent, driver, acp
// or app (internal/layering enforces this). Durability is reached through
// Options.Journal only.
//
// Concurrency: an *Agent is safe for concurrent use. It owns at most one
// loop goroutine, started when runnable work arrives and exiting (after
// calling Options.OnIdle) when none is left; Close cancels the open turn
// and waits for it. Subscribers and OnIdle run synchronously on agent
// goroutines: they must be quick, and must not call Close (OnIdle) or the
// inbox methods (subscribers). The caller owns the session: Close does not
// remove it from its store. Tools must honour their context for
// cancellation to take effect.
package agent
