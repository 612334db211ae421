package app

// This file wires external agents (package driver/external): children of
// an agent definition that names a command run that command as an ACP
// agent. The factory builds such a child's agent over the external agent
// (childFactory calls externalChild), and a project definition's command
// is asked like a command before it runs.

import (
	"context"
	"fmt"
	"sync"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/driver/external"
	"github.com/acp-agent/acp-agent/subagent"
)

// externalMaxSteps bounds the tool calls of one turn of an external agent
// (each is a step of the child's loop): the agent runs its own loop.
const externalMaxSteps = 100000

// externalApprovals remembers, per root session, the project commands the
// person allowed: each command line is shown once per session.
type externalApprovals struct {
	mu   sync.Mutex
	seen map[string]bool
}

// externalChild builds the agent of a child whose definition names a
// command: its model is the external agent, its one tool mirrors the
// agent's tool calls, and closing it stops the process.
func (a *App) externalChild(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
	def := spec.Definition
	e := def.External
	cmd := external.Command{Name: def.Name, Command: e.Command, Args: e.Args, Env: e.Env, LoadSession: e.LoadSession, Resume: e.Resume}
	xopts := external.Options{
		Workspace:     a.Workspace(),
		Approve:       a.approveExternal(def),
		Running:       a.running,
		Getenv:        a.Config.Getenv,
		ClientVersion: a.Config.Version,
		Logger:        a.Log,
	}
	child := external.New(s, cmd, xopts)
	reg, err := tool.NewRegistry(child.Tool())
	if err != nil {
		return nil, err
	}
	opts := a.agentOptions(s, reg)
	opts.Model = child
	if w := a.Config.hooks().WrapModel; w != nil {
		opts.Model = w(child) // scenario runs observe (and fence) its turns
	}
	opts.Route = a.defaultRoute()
	opts.RouteNow = nil
	opts.NoThinking = nil // a child thinks as its model is configured to
	opts.ScriptKey = spec.Label
	opts.Tools = reg
	opts.System, opts.SystemPrompt, opts.PrepareSystem = "", nil, nil
	opts.Budget.Window = 0 // the external agent manages its own context
	opts.MaxSteps = externalMaxSteps
	opts.PreStep = append(opts.PreStep, spec.PreStep...)
	opts.OnIdle = spec.OnIdle
	opts.OnClose = child.Close
	return agent.New(s, opts), nil
}

// approveExternal decides whether def's command may start for a child
// session. A user definition is the person's own: it runs. A project
// definition is a command the repository wants to run: refused in plan
// mode; in bypass mode only an allow rule of the person's settings lets
// it run (bypass never asks); otherwise the person is asked through the
// child's gate, with the exact command line, once per root session ("always"
// saves the rule).
func (a *App) approveExternal(def *subagent.AgentDefinition) func(context.Context, string, external.Command) error {
	return func(ctx context.Context, sessionID string, cmd external.Command) error {
		if def.Scope != string(agentdef.ScopeProject) {
			return nil
		}
		mode := policy.ModeDefault
		if a.Server != nil {
			if m, err := a.Server.RootMode(ctx, sessionID); err == nil && m != "" {
				mode = policy.Mode(m)
			}
		}
		// The answer is remembered for the root session: every later start
		// of the command for a child under it (the next send_message to a
		// settled child starts it again) runs unasked.
		root, err := a.rootOf(ctx, sessionID)
		if err != nil {
			root = sessionID
		}
		env, err := a.Workspace().Env(ctx, sessionID)
		if err != nil {
			return err
		}
		return a.decideExternal(ctx, def, cmd, mode, root, env)
	}
}

// decideExternal is approveExternal's decision for a project definition's
// command, with the root session's mode, its id and the child's workspace.
func (a *App) decideExternal(ctx context.Context, def *subagent.AgentDefinition, cmd external.Command, mode policy.Mode, root string, env workspace.Env) error {
	line := cmd.Line()
	switch mode {
	case policy.ModePlan:
		return &tool.Error{Code: workspace.CodeModeForbids, Message: fmt.Sprintf(
			"the session is in plan mode, which allows read-only tools only: the project's agent %q (%s) would run the command %s, which was not started", def.Name, def.File, line)}
	case policy.ModeBypass:
		pol := settings.Load(a.Config.SettingsFile, env.Cwd)
		if dec, _ := pol.Decide(settings.Call{Tool: "bash", Kind: workspace.KindExecute, Subject: line}); dec != settings.Allow {
			return &tool.Error{Code: workspace.CodePermissionRejected, Message: fmt.Sprintf(
				"the project's agent %q (%s) would run the command %s; in bypass mode a command a project's agent file names runs only when the person's settings allow it (an allow rule for bash(%s))", def.Name, def.File, line, line)}
		}
		return nil
	}
	key := root + "\x00" + line
	a.extApprovals.mu.Lock()
	ok := a.extApprovals.seen[key]
	a.extApprovals.mu.Unlock()
	if ok {
		return nil
	}
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: "start-" + def.Name, Tool: "bash", Kind: workspace.KindExecute, Title: "Start agent " + def.Name + ": " + line,
		Subject: line,
		Detail:  fmt.Sprintf("The project's agent definition %s (%s) runs this command as an ACP agent:\n```sh\n%s\n```", def.Name, def.File, line),
	}); err != nil {
		return err
	}
	a.extApprovals.mu.Lock()
	if a.extApprovals.seen == nil {
		a.extApprovals.seen = map[string]bool{}
	}
	a.extApprovals.seen[key] = true
	a.extApprovals.mu.Unlock()
	return nil
}

// rootOf is the top-level session above id (its ancestors' headers).
func (a *App) rootOf(ctx context.Context, id string) (string, error) {
	for range 64 {
		h, ok := a.headerOf(ctx, id)
		if !ok || h.ParentSession == "" {
			return id, nil
		}
		id = h.ParentSession
	}
	return id, nil
}

// headerOf is id's header, live or stored.
func (a *App) headerOf(ctx context.Context, id string) (session.Header, bool) {
	if a.Sessions == nil {
		return session.Header{}, false
	}
	if s, ok := a.Sessions.Get(id); ok {
		return s.Header(), true
	}
	if a.Persist == nil {
		return session.Header{}, false
	}
	h, _, err := durableStore{a.Persist}.Inspect(ctx, id)
	return h, err == nil
}
