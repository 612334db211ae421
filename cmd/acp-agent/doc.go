// Command acp-agent runs the agent. With no subcommand it serves ACP
// (JSON-RPC, one message per line) on stdin/stdout for an editor such as
// Zed; "acp-agent sessions" and "acp-agent sessions show ID" inspect the
// data directory. Run "acp-agent --help" for flags and environment
// variables.
//
// Layering: this package only collects the process inputs (arguments,
// standard streams, environment) and hands them to package app, the
// composition root; app.Main decides the exit code. Further subcommands
// (scenario runner, agents catalog) are passed to app.Main as extra
// app.Command values: one line each.
//
// Concurrency and ownership: app.Main owns every goroutine it starts and
// returns only after they stopped, except the SDK's reader blocked on
// stdin after a signal, which the process exit ends.
package main
