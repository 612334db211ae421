package app

// This file wires the workspace of sessions: the local file and command
// implementations the ACP server falls back on when the client does not
// advertise fs / terminal, and the resolver the workspace tools ask for a
// session's workspace (the ACP server, which routes through the client).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/toolset"
)

// localFiles serves sessions whose client lacks fs.
var localFiles workspace.Files = local.Files{}

// localCommands serves sessions whose client lacks terminals, and every
// sandboxed command. A sandbox the kernel cannot provide is reported now
// and its commands are refused when they run, never run unsandboxed.
func localCommands(p *sandbox.Policy, log *slog.Logger) workspace.Commands {
	if p == nil {
		return local.Commands{}
	}
	sb := sandbox.New(*p, sandbox.Options{})
	if err := sb.Check(); err != nil {
		log.Error("the command sandbox is on but cannot work on this machine: commands will be refused", "err", err)
	} else {
		log.Info("local commands run in the sandbox", "policy", sb.Describe("<session directory>"))
	}
	return local.Commands{Sandbox: sb}
}

// killLeftover kills what commands of an agent that died left (markers
// recorded in the session log).
var killLeftover = local.KillMarked

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

// wireWorkspace offers the workspace tools (read, write, edit, glob, grep,
// bash) to top-level agents; childFactory offers them to children too
// (filtered by the delegation's tool filter).
func wireWorkspace(a *App) error {
	return a.AddWorkspaceTools(toolset.Tools(a.Workspace())...)
}

// AddWorkspaceTools offers tools to top-level agents and to every child
// (subject to its tool filter). Call it only from wiring (before the
// server is created).
func (a *App) AddWorkspaceTools(tools ...tool.Tool) error {
	for _, t := range tools {
		if err := a.Tools.Add(t); err != nil {
			return fmt.Errorf("add tool %s: %w", t.Spec().Name, err)
		}
		a.WorkspaceTools = append(a.WorkspaceTools, t)
	}
	return nil
}
