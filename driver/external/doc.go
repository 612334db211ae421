// Package external runs a child that is another ACP agent (codex-acp,
// claude-agent-acp, `gemini --acp`, opencode, acp-agent itself): the
// command an agent definition names (agent/agentdef External), started as
// a process and driven through the client side of the ACP Go SDK.
//
// What it owns: one external agent per child session (Child) — its
// process, run under the same reaper and running registry as local
// commands (agent/tool/workspace/local StartSupervised) and stopped when
// the child's agent closes (the child settled, was released, or the
// agent exits); its ACP connection (initialize with the client
// capabilities we honour, session/new in the child's cwd — its worktree
// when isolated —, session/resume or session/load on a cold resume where
// the agent advertised them, session/prompt for each turn, session/cancel
// for an interrupt); and the agent's requests to its client: fs/* and
// terminal/* served by the child's workspace (its files, commands and
// permission gate, through workspace.Resolver, so inside its boundary
// and through our gate) and session/request_permission shown to the
// person as this child's question (the same gate as our own children's).
//
// How a child's log stays the only authority: the child is an ordinary
// agent.Agent of ours whose model is the external agent (Child.Stream)
// and whose one tool mirrors the external agent's tool calls (Tool). Its
// text and thoughts are the child's assistant chunks; each tool_call it
// announces ends a step with a call of tool ExternalToolName, recorded as
// a tool/call, whose result is the call's final status and content. So
// the digest, the listings, the child stream and session/load of the
// child work as for our own children, also after a restart. The external
// session id and the capabilities the agent announced are recorded in the
// child's log (TypeExternal, ignorable), next to its descriptor and the
// definition record (which holds the command, its arguments and the names
// of the variables it gets): a cold resume starts the command again and
// resumes or loads that session, or fails with "cannot resume: the agent
// does not support session/load".
//
// Failure: a crash, a hang (no message from the agent within
// Options.ReplyTimeout while nothing of ours is pending, or no answer to
// initialize within Options.InitTimeout), a line on its stdout that is
// not JSON, and an initialize refusal end the turn with an error whose
// code is CodeExternalFailed and whose message says what happened (the
// tail of its stderr included), so the child settles failed with the
// cause in the notice and the listings. Nothing waits on the agent
// without a deadline or the turn's context.
//
// Nested children: the Go SDK cannot decode a session/update of kind
// subagent_update (newer than its schema), so the stdout reader sees
// each line first: a subagent_update is recorded in the child's log
// (TypeNestedChild, ignorable) and reported through Options.OnNested.
//
// Layering: external imports agent, agent/session, agent/model,
// agent/tool, agent/tool/workspace, agent/tool/workspace/local and the
// ACP SDK. It is the one package besides acp that imports the SDK (its
// client side: acp serves our editor, this package is a client of other
// agents; internal/layering names the exception). It must not import
// subagent, acp, persistence or app: the composition root builds a
// Child per external child in its agent factory.
package external
