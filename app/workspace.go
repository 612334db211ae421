package app

// This file wires the workspace of sessions: the local file and command
// implementations the ACP server falls back on when the client does not
// advertise fs / terminal, and the resolver the workspace tools ask for a
// session's workspace (the ACP server, which routes through the client).

import (
	"context"
	"errors"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
)

// localFiles and localCommands serve sessions whose client lacks fs /
// terminal.
var (
	localFiles    workspace.Files    = local.Files{}
	localCommands workspace.Commands = local.Commands{}
)

// Workspace returns the resolver workspace tools use. It resolves through
// the ACP server, which is created after the tools; before that (never
// during a tool call) it fails.
func (a *App) Workspace() workspace.Resolver { return appResolver{a} }

type appResolver struct{ a *App }

func (r appResolver) Env(ctx context.Context, sessionID string) (workspace.Env, error) {
	if r.a.Server == nil {
		return workspace.Env{}, errors.New("app: the workspace is not wired yet")
	}
	return r.a.Server.Env(ctx, sessionID)
}
