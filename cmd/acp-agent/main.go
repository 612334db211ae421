// Command acp-agent is an Agent Client Protocol agent for editors. See
// doc.go and the README.
package main

import (
	"context"
	"os"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/scenarios"
)

func main() {
	// A sandboxed command starts as this executable, which sandboxes
	// itself and execs the command (package sandbox); it never returns.
	sandbox.Main()
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, scenarios.Command()))
}
