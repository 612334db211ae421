// Command acp-agent runs the agent. With no subcommand it serves ACP
// (JSON-RPC, one message per line) on stdin/stdout for an editor such as
// Zed; "acp-agent sessions" and "acp-agent sessions show ID" inspect the
// data directory. Run "acp-agent --help" for flags and environment
// variables.
//
// Layering: this package only collects the process inputs (arguments,
// standard streams, environment) and hands them to package app/cli, the
// command line over app (the composition root); cli.Main decides the exit
// code. Further subcommands (the scenario runner) are passed to cli.Main
// as extra cli.Command values: one line each. This is where the command
// line and the composition meet: app never imports app/cli.
//
// Concurrency and ownership: cli.Main owns every goroutine it starts and
// returns only after they stopped, except the SDK's reader blocked on
// stdin after a signal, which the process exit ends.
package main
