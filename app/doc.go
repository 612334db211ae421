// Package app is the composition root of acp-agent, shared by the binary,
// the tests and the scenario runner. New builds one agent process from a
// Config: the live session store with persistence attached (write-behind
// JSONL under <DataDir>/sessions), the agent registry, the model (scripted
// from script:PATH, a real provider through the Provider hook, or none;
// several --model values offer the model picker, models.go; a provider
// whose API key is missing starts anyway and is built again when the
// client authenticates, auth.go), the tool registry and the ACP server.
// The command line (flags, commands, exit status) is package app/cli,
// which builds its Config; this package never imports it.
//
// The workspace tools (read, write, edit, glob, grep, bash; workspace.go)
// are offered to top-level agents and to children (within their tool
// filter); they resolve a session's workspace through the ACP server
// (acp.Server.Env), which falls back on the local implementations: one
// set of local commands per sandbox policy in use (the process's, and
// each one a project's settings tighten it to). Local commands record
// their markers in <DataDir>/running while they run; Run first sweeps
// what agents that died left there.
//
// The context policy (window, compaction threshold) is the flags', else
// the user settings file's context section, else the built-in table.
//
// commands.go adds the todo tool (plans) to top-level agents, the /agents
// slash command, and NewAgentWithTools, which gives a session's agent the
// tools of its MCP servers (Config.MCPStartTimeout bounds their start).
//
// exec.go is the engine of "acp-agent exec" (App.Exec): it runs the ACP
// server in process over a pair of pipes and drives it with the headless
// client (app/headless, on jsonrpc2); the command itself is in app/cli.
// Recording a run (--record) is package agent/model/recording/live, which
// plugs in through Config.WrapModel and the session store.
//
// agents.go wires the subagent catalog into acp.SubagentsListExtension
// (the protocol side lives in acp); readonly.go composes the read-only
// catalog of a data directory that app/cli's "agents" command prints.
// store.go hands persistence.Damage's one wording (Reason) to the acp
// server (the session/load notice, session/list _meta), the subagent
// catalog (a damaged child's row) and the commands, so every reader words
// a damaged log the same.
//
// Config is what a user (or a program embedding acp-agent) configures.
// Knobs only this module's tests and scenario runner turn (a model
// instance, a model observer, no fsync, storage and child fault injection,
// crashing on handler panics) are in Config.Testing, whose type
// (internal/testhooks.Hooks) cannot be named outside the module.
//
// Wiring hooks for later components: wireSubagents (subagents.go) and
// providerModel (provider.go) are the marked places where the subagent
// runtime and the real model providers are attached; Config.Wire lets a
// caller add tools, extension methods (App.Extensions) and shutdown
// drainers (App.Drainers) without editing this package.
//
// Layering: app imports everything below it (acp, agent/..., subagent,
// driver/inprocess, persistence, internal/testhooks) and nothing imports
// app except app/cli, cmd/acp-agent, scenarios and tests. It must not
// import app/cli (internal/layering checks it). It adapts; protocol
// knowledge (methods, params, error codes) belongs in acp, not here.
//
// Concurrency and ownership: an App is built and torn down by one
// goroutine. Serve (or Run, which adds signal handling and the background
// flusher in one oklog/run group) owns every goroutine it starts and
// returns after the graceful shutdown: prompts cancelled and answered,
// drainers run, agents closed, sessions released, persistence flushed.
// Close then closes persistence; the caller of New must call it.
package app
