package app

// This file wires the workspace of sessions: the local file and command
// implementations the ACP server falls back on when the client does not
// advertise fs / terminal, and the resolver the workspace tools ask for a
// session's workspace (the ACP server, which routes through the client).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/toolset"
)

// localCommands serves sessions whose client lacks terminals, and every
// sandboxed command: one local.Commands per sandbox policy in use (the
// process's, and those projects tighten it to), each built once. A
// sandbox the kernel cannot provide is reported when first used and its
// commands are refused when they run, never run unsandboxed.
type localCommands struct {
	// process is the sandbox of the whole process (--sandbox, the user
	// file); nil is none.
	process *sandbox.Policy
	log     *slog.Logger
	running *local.Running
	// protected are the agent's own settings file and data directory,
	// kept read-only for sandboxed commands where they lie in a
	// writable directory.
	protected []string

	mu    sync.Mutex
	byKey map[string]workspace.Commands
}

func newLocalCommands(process *sandbox.Policy, log *slog.Logger, running *local.Running) *localCommands {
	return &localCommands{process: process, log: log, running: running, byKey: map[string]workspace.Commands{}}
}

// For returns the local commands of a root session whose merged settings
// have sandbox section sb (acp.Options.SandboxCommands).
func (l *localCommands) For(sb settings.Sandbox) workspace.Commands {
	p := sessionSandbox(l.process, sb)
	key := ""
	if p != nil {
		b, _ := json.Marshal(p)
		key = string(b)
	}
	// Its commands go to the reaper server: started now, while the
	// session's first model turn runs.
	l.running.Prestart()
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.byKey[key]; ok {
		return c
	}
	c := local.Commands{Running: l.running}
	if p != nil {
		pp := *p
		pp.Protected = append(append([]string(nil), p.Protected...), l.protected...)
		sb := sandbox.New(pp, sandbox.Options{})
		if err := sb.Check(); err != nil {
			l.log.Error("the command sandbox is on but cannot work on this machine: commands will be refused", "err", err)
		} else {
			l.log.Info("local commands run in the sandbox", "policy", sb.Describe("<session directory>"))
		}
		c.Sandbox = sb
	}
	l.byKey[key] = c
	return c
}

// Unsandboxed returns local commands without a sandbox, for a session
// whose person turned it off (acp.Options.UnsandboxedCommands).
func (l *localCommands) Unsandboxed() workspace.Commands { return local.Commands{Running: l.running} }

// sessionSandbox is the sandbox of a root session's commands: the
// process's, tightened by sb (the user file and the session's project
// file merged, which may only tighten: settings.Policy), or sb's own when
// the process has none and the project turns it on. nil is no sandbox.
func sessionSandbox(process *sandbox.Policy, sb settings.Sandbox) *sandbox.Policy {
	if process == nil {
		return SandboxPolicy(false, sb)
	}
	p := *process
	if sb.Network != nil && !*sb.Network {
		p.Network = false
	}
	// sb's writable paths are the user's (already the process's) and the
	// session's additional workspace roots (acp adds them): a project
	// file cannot add any (settings.Policy leaves them out).
	for _, w := range sb.WritablePaths {
		if !slices.Contains(p.Writable, w) {
			p.Writable = append(slices.Clone(p.Writable), w)
		}
	}
	return &p
}

// runningDir is the registry of running local commands in the data dir.
func runningDir(dataDir string) string { return filepath.Join(dataDir, "running") }

// sweepLeftovers kills the processes of commands recorded as running by
// agents that are gone (local.SweepRunning): one read of the registry
// when no agent died.
func (a *App) sweepLeftovers() {
	n, err := local.SweepRunning(runningDir(a.Config.DataDir))
	if err != nil {
		a.Log.Warn("sweeping the commands left by agents that died", "err", err)
	}
	if n > 0 {
		a.Log.Warn("killed processes left by an agent that died", "processes", n)
	}
}

// Workspace returns the resolver workspace tools use. It resolves through
// the ACP server, which is created after the tools; before that (never
// during a tool call) it fails.
func (a *App) Workspace() workspace.Resolver {
	var r workspace.Resolver = appResolver{a}
	if a.Config.WrapWorkspace != nil {
		r = a.Config.WrapWorkspace(r)
	}
	return r
}

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

// SandboxPolicy is the command sandbox in force for the process: on with
// --sandbox or the user settings' sandbox.enabled, with the settings'
// writable paths and network choice. nil is no sandbox. A project file
// may tighten it for the sessions in that project (sessionSandbox).
func SandboxPolicy(flag bool, s settings.Sandbox) *sandbox.Policy {
	on := flag || s.Enabled != nil && *s.Enabled
	if !on {
		return nil
	}
	p := &sandbox.Policy{Writable: s.WritablePaths}
	if s.Network != nil {
		p.Network = *s.Network
	}
	return p
}
