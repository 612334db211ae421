// Package app is the composition root of acp-agent, shared by the binary,
// the tests and the scenario runner. New builds one agent process from a
// Config: the live session store with persistence attached (write-behind
// JSONL under <DataDir>/sessions), the agent registry, the model (scripted
// from script:PATH, a real provider through the Provider hook, or none;
// several --model values offer the model picker, models.go; a provider
// whose API key is missing starts anyway and is built again when the
// client authenticates, auth.go), the tool registry and the ACP server.
// Main is the command line (main.go: root flags, environment variables,
// serving; cli.go: the command tree — Command with synopsis, description,
// examples, its own flags and subcommands, "help [COMMAND]", --help at
// every level — and the exit status: 0 ok, 1 failure, 2 usage error,
// UsageError; configuration mistakes, model.ErrBadConfig, are usage
// errors).
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
// exec.go is "acp-agent exec": one prompt without an editor. It builds the
// composition serving builds (serveConfig, New), runs its ACP server in
// process over a pair of pipes and drives it with the headless client
// (app/headless, on jsonrpc2), answering permission questions by --ask;
// exit status 3 (ExitRefused, through ExitCodeError) is a refused
// question or a cancelled turn. Its options' prepare hook is where a
// recording model wrapper (--record) plugs into the Config.
// record.go is exec --record: it sets Config.WrapModel to an
// agent/model/recording wrapper (secret values from the key variables and
// every variable named like a secret), observes the store for settlement
// notices (the replay's wait step and fences), and writes the scenario
// when the run is over. record_serve.go is serving's --record: the same
// wrapper and observer, limited to the first session the editor creates
// and its subagents, plus taps on stdin and stdout that read each
// JSON-RPC line (before the server, or the editor, sees it) into the
// scenario's client steps; the scenario is written when serving stops.
//
// agents.go wires the subagent catalog into acp.SubagentsListExtension
// (the protocol side lives in acp) and defines the "agents" command;
// sessions.go the "sessions" command, whose "show" frames a log rendered
// by agent/transcript (Inspect style); repair.go its "repair". These data
// commands only read (they never create the data directory) and report
// through dataerrors.go: "session not found", SESSION_CORRUPT, reasons
// without package prefixes; a damaged or repaired log in
// persistence.Damage's one wording, which store.go also hands to the acp
// server (the session/load notice, session/list _meta) and the subagent
// catalog (a damaged child's row), so every command words it the same.
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
// app except cmd/acp-agent, scenarios and tests. It adapts; protocol
// knowledge (methods, params, error codes) belongs in acp, not here.
//
// Concurrency and ownership: an App is built and torn down by one
// goroutine. Serve (or Run, which adds signal handling and the background
// flusher in one oklog/run group) owns every goroutine it starts and
// returns after the graceful shutdown: prompts cancelled and answered,
// drainers run, agents closed, sessions released, persistence flushed.
// Close then closes persistence; the caller of New must call it.
package app
