package workspace

import (
	"context"

	"github.com/acp-agent/acp-agent/agent/session"
)

// WithEnv gives every command of c the environment env and the names
// unset (a client terminal must unset them), unless the command names its
// own. The sandbox of c shows through (DescribeSandbox, KeepsProtected).
func WithEnv(c Commands, env, unset []string) Commands {
	return envCommands{Commands: c, env: env, unset: unset}
}

// envCommands is WithEnv's Commands.
type envCommands struct {
	Commands
	env, unset []string
}

// DescribeSandbox forwards the sandbox of the wrapped Commands.
func (c envCommands) DescribeSandbox(cwd string) string {
	return SandboxOf(c.Commands, cwd)
}

// KeepsProtected forwards the sandbox's protection of the protected paths.
func (c envCommands) KeepsProtected(cwd string) bool {
	return SandboxKeepsProtected(c.Commands, cwd)
}

func (c envCommands) Run(ctx context.Context, cmd Command, display func(session.ToolDisplay)) (CommandResult, error) {
	if cmd.Env == nil {
		cmd.Env = c.env
	}
	if cmd.Unset == nil {
		cmd.Unset = c.unset
	}
	return c.Commands.Run(ctx, cmd, display)
}
