// Package acp is the Agent Client Protocol adapter: it serves one editor
// connection (github.com/coder/acp-go-sdk v0.13.0, protocol version 1) on
// top of the agent runtime. It is the only package that imports the SDK
// (aliased acpsdk).
//
// Supported methods:
//   - initialize: protocolVersion 1, agentInfo {name "acp-agent", version},
//     loadSession, sessionCapabilities.list, .close, .resume, .fork
//     (unstable), .delete, .additionalDirectories and .systemPrompt
//     (protocol2026.go adds what the SDK's type cannot say), promptCapabilities
//     {embeddedContext: true, image: whether a configured model takes
//     images (Options.Images), audio: false}, mcpCapabilities
//     {http: true, sse: true}, authMethods (Options.Auth: one env_var method
//     per missing API key variable, else []);
//     extension methods are advertised under agentCapabilities._meta
//     ["acp-agent"] (for example {"subagents/list": true}). The client's
//     capabilities are kept (ClientCapabilities).
//   - session/prompt content (content.go, links.go): text; resource_link,
//     whose file:// target is read through the session's Files, numbered
//     and capped, and recorded with the link; embedded text resources with
//     the line range of a selection (#L12-20); images only for a session
//     whose model takes them; audio and blobs refused (-32602).
//   - session/new (absolute cwd; mcpServers started, see MCP below; modes),
//     session/prompt, session/cancel (notification; a subagent child's id
//     interrupts the child's turn through Options.InterruptChild),
//     session/load (replay before the answer; a subagent child id replays
//     read-only, then a notice marked _meta["acp-agent/readOnly"], and
//     refuses prompts with READ_ONLY_SESSION: child_session.go; mcpServers
//     started when the load builds the session's agent; a log, top-level
//     or child, with a bad line in the middle replays its valid part
//     read-only followed by a notice saying what is damaged and how to
//     repair it, and its prompts, mode and model changes, resume and fork answer
//     -32602 SESSION_DAMAGED (readonly.go); a replay that cannot be read
//     back from the file answers -32603 REPLAY_FAILED with the cause and
//     leaves the session unbound, never success with a cut history; a
//     repaired log's replay ends with a notice saying what the repair
//     dropped (Options.DescribeDamage, which session/list also shows as
//     _meta["acp-agent/damage"]),
//     session/list (stored top-level sessions, newest first, cwd filter,
//     title, updatedAt, opaque cursor, 50 per page; children too with
//     _meta["acp-agent/includeChildren"]: true; only the subagent children
//     of session P with _meta["acp-agent/parentSession"]: P),
//     session/close.
//   - authenticate (auth.go): the Authenticator reads the environment
//     again; until a model has its key its prompts answer -32000
//     AUTH_REQUIRED naming the variable. Without Options.Auth, -32601.
//   - session/resume (resume.go): session/load without the replay; a
//     subagent session is refused (-32602 READ_ONLY_SESSION).
//   - session/fork (fork.go, unstable): a new top-level session seeded with
//     the source's completed turns (header parentSession and seedLength, no
//     descriptor), durable before the answer, listed, not replayed.
//   - The 2026 additions the SDK predates (protocol2026.go routes the
//     methods it does not know: aliasReader renames them in front of its
//     reader to private "_" names it hands to HandleExtensionMethod):
//     session/delete (delete.go: a top-level session's log and its
//     subagents', refused with -32602 SESSION_BUSY while one runs or
//     SESSION_LOCKED while another process holds one, -32002 when gone);
//     additionalDirectories on session/new, load and resume
//     (directories.go: existing absolute directories, inside the boundary
//     for the tools, the gate, the rules and the sandbox, recorded in the
//     header or a session/additionalDirectories event, listed in the
//     system prompt; refused on fork); messageId on prompts and message
//     chunks (message_id.go: derived from the log, so replays repeat
//     them); $/cancel_request (cancel_request.go: -32800 for a list, load
//     or prompt it names); the ask_user tool over elicitation/create
//     (elicitation.go, rawcall.go: only for a client advertising form
//     elicitation); the client's system prompt (system_prompt.go: append
//     mode, its own section, recorded); the boolean config option
//     "sandbox" for a client announcing
//     clientCapabilities.session.configOptions.boolean (config_boolean.go),
//     and "thinking" for the same client where the session's model thinks
//     (config_thinking.go).
//   - Lines the SDK cannot decode, which it drops unanswered, get an error
//     with id null from the reader in front of it (wire.go): -32700 for
//     text that is not JSON, -32600 for JSON that is not a message.
//   - Long sessions (context.go, notice.go): usage_update {used, size,
//     cost} after each model response and compaction and once at the end
//     of a session/load replay, when the window is known (Options.Budget);
//     each compaction as compaction_update (raw JSON, the SDK lacks the
//     type) when the initialize request announced
//     clientCapabilities.session.compaction, else as a "think" tool call
//     "Compact conversation" with _meta.contextCompaction; model retry
//     waits as a marked agent_thought_chunk line (_meta "acp-agent/notice"),
//     live only, and the retry of a broken answer the same way from its
//     session/notice record, live and on replay.
//   - session/set_mode and modes {availableModes, currentModeId} in the
//     session/new and session/load answers (modes.go): default,
//     accept-edits, plan, bypass. A change is logged as an ignorable
//     "session/mode" event (so it survives session/load) and announced as
//     current_mode_update, live and on replay.
//   - configOptions and session/set_config_option when Options.Models
//     holds two or more models (config_options.go): one select option,
//     id "model", category "model", values the models' ids, current value
//     the session's model (the first model until one is chosen). A choice
//     is logged as an ignorable "session/model" event (so it survives
//     session/load and a restart) and announced as config_option_update,
//     live and on replay; the agent asks Server.SessionModel before each
//     model request, so it applies from the next one. Bad values and
//     unknown config ids answer -32602. With fewer models no configOptions
//     are offered and session/set_config_option answers -32601. For
//     clients that predate configOptions the same choice is offered as the
//     legacy (unstable) models field and session/set_model.
//   - "_acp-agent/..." extension methods registered in Options.Extensions.
//     The protocol side of ours lives here: SubagentsListExtension
//     ("_acp-agent/subagents/list", subagents_list.go) parses and checks
//     its params (-32602 CodeInvalidParams) and reads the catalog through
//     the SubagentCatalog interface it declares; app wires the subagent
//     catalog into it.
//
// MCP (mcp.go): the servers a client names (stdio, http, sse) are started
// per session by package agent/tool/mcp before the session's agent is
// built (Options.NewAgentWithTools adds their tools, named
// "mcp__<server>__<tool>"), and stopped when the session is released
// (session/close, shutdown). A server that fails to start does not fail the
// request: the user gets an agent_message_chunk naming it and the error.
//
// Plans (plan.go): a successful call of the todo tool becomes a "plan"
// update with the whole list; it is derived from the logged result, so
// session/load replays it.
//
// Slash commands (commands.go): Options.Commands are announced with
// available_commands_update after the session/new response (respond.go
// queues it when that response is written, so the client knows the
// session) and after a session/load replay. A prompt whose first word is
// "/name" runs the command instead of a model turn (an unknown name gets
// the list of known ones); the exchange is not recorded in the log.
//
// Everything else (other unstable methods, unknown methods) answers
// -32601 and its capability stays off.
//
// Client methods the agent calls: session/request_permission (the
// permission gate, permission.go), and — only when the client advertised
// them in initialize — fs/read_text_file, fs/write_text_file and
// terminal/create, wait_for_exit, output, kill, release (workspace.go,
// terminal.go). Server.Env is the workspace.Resolver of the workspace
// tools: a session's cwd, files and commands through its root session's
// client (Options.LocalFiles / LocalCommands otherwise) and its gate.
// The gate applies the root session's settings (Options.Settings, held per
// root by package agent/settings/rootpolicy: allow/ask/deny rules, loaded
// once per root and reported to the user when malformed) and gives
// commands the root's environment without secrets (rootpolicy's
// CommandEnv, wrapped by workspace.WithEnv); the policy is asked, never
// defined, here (policy.go). A
// child decides in the mode policy.ChildMode derives from its root's and
// the permission mode its own descriptor records (an agent definition's,
// read once from the child's log past its seed). A
// child (subagent) session's permission requests are asked on its root
// session: the child's call is first shown there as a pending tool_call
// with id "<child id>/<call id>", a "[<label>] " title prefix and
// _meta["acp-agent/subagent"] {childSessionId, depth}. The question and
// its outcome are recorded in the root's log as ignorable
// "subagent/permission" events (child_permission.go), each durable
// (checkpointed, the root's updates held meanwhile) before the update it
// renders is sent, so session/load replays the call as it was shown; a
// question left without outcome by a dead process is closed as failed
// when the root is bound again. Every client
// request made for a tool call first flushes the session's queued
// updates, so it never overtakes its tool_call.
//
// Children on the wire: a delegation's tool call shows its child's live
// digest (subagent's progress; a background child's final digest comes
// with its settlement notice, which the translator maps back to the call
// that started or last messaged the child: subagent_link.go). A
// background delegation's call stays in_progress until its child settles,
// is closed once and repeats its title and kind (background_call.go). For
// a client without clientCapabilities.subagents, a child's question asked
// while no prompt of its root runs is held until the next prompt, and one
// nobody answers within Options.Questions' deadline is refused
// (HeldQuestions, held_questions.go; a client may opt out with
// _meta["acp-agent"].questionsBetweenPrompts); a settlement between
// prompts is recapped at the start of the next prompt (emitter). A client
// announcing clientCapabilities._meta["acp-agent"].subagentUpdates also
// gets each descendant's own updates under its session id: package
// subagent/childtree follows the child tree and tells each child's events
// (opened, announced, updates, state, messages), and child_stream.go
// encodes them, one emitter per followed child.
//
// Updates: one translator maps log events (and transient tool progress) to
// session/update for live streaming and for load replay alike —
// assistant text/reasoning chunks, tool_call/tool_call_update (kind from the
// tool's optional Kind, "think" for delegations; title from the optional
// Titler; locations from the optional tool.Locator at the start; a result's
// or progress report's session.ToolDisplay as diff and terminal content,
// locations and _meta, display.go), session_info_update for titles,
// current_mode_update for session/mode events, config_option_update for
// session/model events, a child's tool_call and
// its closing update for subagent/permission events, user_message_chunk
// on replay.
// A finished call's _meta comes from its logged result (the tool's display
// meta; for delegations logged without one, a child link derived from the
// raw output), so a replay shows the same links as the live stream.
// Serve ends at stdin EOF, at the first failed write to the client (it
// stopped reading), or when its context ends.
// Replay (session/load) is streamed event by event, read from the
// session's log in batches (from its file once the load has dropped the
// log from memory: evictLoaded); each run of text chunks of one model
// reply is sent as one update, encoded in one pass (replay.go) with bytes
// identical to the SDK's.
// Write-ahead: a tool_call update is sent only once its tool/call event is
// durable (Options.Durable, asked by the emitter; free when the agent's
// checkpoint already covered it), so the client never sees a call that a
// restart could forget. Text and thought chunks are held the same way, on
// a group commit (Options.DurableText: one fsync per short window shared
// by its chunks), so nothing shown is lost to a crash.
// Errors: one mapping (toRequestError) turns every handler error into an
// unwrapped *acpsdk.RequestError: -32602 for bad params, unknown or
// malformed session ids, a prompt already in flight and unsupported
// content; -32603 for faults, a failed turn and a missing model. Handler
// panics are recovered, logged with their stack and answered -32603.
//
// Errors are errcode.Coded with acp's codes (type Error, errors.go), the
// module's one typed-error shape; domain errors of other packages keep
// their codes through ErrorCode.
//
// Layering: acp imports agent, agent/session, agent/tool (and its
// agent/tool/workspace interfaces), agent/model, and the shared leaves
// agent/delegation (delegation tool names, the child-link _meta key,
// result keys) and internal/errcode, plus agent/settings/rootpolicy (each
// root's settings; never agent/settings, which reads the files) and
// subagent/childtree (the child-tree watcher, a leaf over the session
// store). It must not import the subagent runtime, driver, os/exec,
// persistence, app or scenarios (internal/layering enforces this): durable
// storage is reached through the SessionStore interface and the subagent
// catalog through SubagentCatalog, both declared here and adapted by app.
// Nothing imports acp except the composition root (app) and tests.
//
// Concurrency and ownership: a Server serves one connection (Serve, once)
// and is safe for concurrent use; the SDK runs each request on its own
// goroutine and notifications (session/cancel) serially, so Cancel only
// signals. Each bound session has an emitter: a FIFO drained by at most one
// goroutine at a time (started on demand, exiting when idle, waited for by
// Close), so a session's updates keep the log's order and every update of a
// prompt is on the wire before its response. The Server closes the agents
// it created and removes the sessions it made live in Close; Serve's caller
// calls Shutdown (done by Serve), lets the subagent runtime drain, then
// Close.
package acp
