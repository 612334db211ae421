package acp

// This file applies the settings (package agent/settings) to a root
// session and its children: the permission rules the gate consults and
// the environment commands get (without secrets). The policy belongs to
// the root session: loaded once when its gate first decides, dropped with
// it (gateState.forget), and followed by every child of that root.

import (
	"context"
	"fmt"
	"os"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// policyFor returns the policy of root session root, whose cwd is cwd;
// nil when the server has no settings.
func (s *Server) policyFor(root, cwd string) *settings.Policy {
	if s.opts.Settings == nil {
		return nil
	}
	s.gate.mu.Lock()
	p, ok := s.gate.policies[root]
	s.gate.mu.Unlock()
	if ok {
		return p
	}
	p = s.opts.Settings(cwd)
	for _, err := range p.Problems() {
		// Reported once per root session; nothing of that file applies.
		s.log.Warn("settings file not applied", "session_id", root, "err", err)
	}
	for _, err := range p.Ignored() {
		s.log.Warn("project setting not applied", "session_id", root, "err", err)
	}
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	if prev, ok := s.gate.policies[root]; ok {
		return prev
	}
	if s.gate.policies == nil {
		s.gate.policies = map[string]*settings.Policy{}
	}
	s.gate.policies[root] = p
	return p
}

// settingsNotices loads the settings of a root session now (so a
// malformed file is reported when the session starts, not at its first
// tool call) and tells the user about each file left out.
func (s *Server) settingsNotices(root, cwd string) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	p := s.policyFor(root, cwd)
	for _, err := range p.Problems() {
		out = append(out, acpsdk.UpdateAgentMessageText(fmt.Sprintf(
			"Settings file not applied (nothing of it is used until it is fixed): %v\n\n", err)))
	}
	for _, err := range p.Ignored() {
		// The rest of that file applies.
		out = append(out, acpsdk.UpdateAgentMessageText(fmt.Sprintf("Project setting not applied: %v\n\n", err)))
	}
	return out
}

// commandEnv is the environment of the commands of root session root,
// and the names a client terminal must unset.
func (s *Server) commandEnv(root, cwd string) (env, unset []string) {
	environ := os.Environ
	if s.opts.Environ != nil {
		environ = s.opts.Environ
	}
	all := environ()
	e := s.policyFor(root, cwd).Env()
	return settings.CommandEnv(all, s.opts.SecretEnv, e), settings.DroppedNames(all, s.opts.SecretEnv, e)
}

// filteredEnv is the environment of processes started for a session in
// cwd before it has a policy of its own (its MCP servers): the agent's
// without secrets, under cwd's settings.
func (s *Server) filteredEnv(cwd string) []string {
	environ := os.Environ
	if s.opts.Environ != nil {
		environ = s.opts.Environ
	}
	var e settings.Env
	if s.opts.Settings != nil {
		e = s.opts.Settings(cwd).Env()
	}
	return settings.CommandEnv(environ(), s.opts.SecretEnv, e)
}

// envCommands gives every command the filtered environment.
type envCommands struct {
	workspace.Commands
	env, unset []string
}

// DescribeSandbox forwards the sandbox of the wrapped Commands.
func (c envCommands) DescribeSandbox(cwd string) string {
	return workspace.SandboxOf(c.Commands, cwd)
}

// KeepsProtected forwards the sandbox's protection of the protected paths.
func (c envCommands) KeepsProtected(cwd string) bool {
	return workspace.SandboxKeepsProtected(c.Commands, cwd)
}

func (c envCommands) Run(ctx context.Context, cmd workspace.Command, display func(session.ToolDisplay)) (workspace.CommandResult, error) {
	if cmd.Env == nil {
		cmd.Env = c.env
	}
	if cmd.Unset == nil {
		cmd.Unset = c.unset
	}
	return c.Commands.Run(ctx, cmd, display)
}

var _ workspace.ReadFilter = (*gate)(nil)

// ReadDenied reports whether a settings rule denies tool reading name, so
// glob and grep skip what read would refuse: the name as shown or the
// file it resolves to (a symlink to a denied file is denied too).
func (g *gate) ReadDenied(tool, kind, name string) bool {
	pol := g.s.policyFor(g.root, g.rootCwd)
	if !pol.HasDeny() {
		return false
	}
	req := workspace.PermissionRequest{Tool: tool, Kind: kind, Subject: name}
	if p, err := workspace.ResolvePath(g.cwd, name); err == nil {
		req.Resolved = workspace.ResolvedSubject(p)
	}
	d, _ := g.ruleDecision(req)
	return d == policy.RuleDeny
}

// ruleDecision applies the settings rules to req over the path as written
// and as resolved (policy.Rules). Allowing a path outside the cwd or a
// protected path takes a rule that names it (a pattern), never a rule for
// the whole tool.
func (g *gate) ruleDecision(req workspace.PermissionRequest) (policy.Rule, string) {
	pol := g.s.policyFor(g.root, g.rootCwd)
	if pol == nil {
		return policy.RuleNone, ""
	}
	return policy.Rules(pol, req.Tool, req.Kind, policy.Subject{Lexical: req.Subject, Resolved: req.Resolved},
		req.OutsideCwd || req.Protected != "")
}

// saveAlways saves an "always allow" answer as a user-level rule scoped to
// the root's project directory: the exact command for bash, the tool for
// an MCP tool. It reports whether a rule was saved.
func (g *gate) saveAlways(req workspace.PermissionRequest) bool {
	rule := alwaysRule(req)
	if rule == "" || !g.s.policyFor(g.root, g.rootCwd).CanSave() {
		return false
	}
	if err := g.s.policyFor(g.root, g.rootCwd).SaveAllow(rule); err != nil {
		g.s.log.Warn("an always-allow answer was not saved as a rule; it holds for this session only", "rule", rule, "err", err)
		return false
	}
	return true
}

// alwaysRule is the rule an "always allow" answer to req saves, or ""
// (policy.AlwaysRule).
func alwaysRule(req workspace.PermissionRequest) string {
	return policy.AlwaysRule(req.Kind, req.Tool, req.Subject, classOf(req))
}

// protector is the server's fixed protected targets: the user settings
// file and the data directory (Options.Protected).
func (s *Server) protector() policy.Protector { return s.opts.Protected }
