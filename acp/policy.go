package acp

// This file applies the settings of a root session (package
// agent/settings/rootpolicy holds them, loaded once per root and dropped
// with it) to the gate: the permission rules it consults, the rules an
// "always" answer saves, and the notices of settings files left out.

import (
	"fmt"
	"path/filepath"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/settings/rootpolicy"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// policyFor returns the policy of root session root, whose cwd is cwd;
// nil when the server has no settings (rootpolicy.Cache.For).
func (s *Server) policyFor(root, cwd string) *rootpolicy.Policy {
	return s.rootPolicies().For(root, cwd)
}

// rootPolicies is the connection's settings cache, made on first use from
// Options (Settings, Environ, SecretEnv).
func (s *Server) rootPolicies() *rootpolicy.Cache {
	s.policiesOnce.Do(func() {
		s.policies = &rootpolicy.Cache{Load: s.opts.Settings, Environ: s.opts.Environ, SecretEnv: s.opts.SecretEnv, Log: s.log}
	})
	return s.policies
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

var _ workspace.ReadFilter = (*gate)(nil)

// ReadDenied reports whether a settings rule denies tool reading name, so
// glob and grep skip what read would refuse: the name as shown or the
// file it resolves to (a symlink to a denied file is denied too). It does
// not search for a multiply linked file's other names under wildcard rules
// (a search skips such files, and a read of one is authorized).
func (g *gate) ReadDenied(tool, kind, name string) bool {
	pol := g.s.policyFor(g.root, g.rootCwd)
	if !pol.HasDeny() {
		return false
	}
	req := workspace.PermissionRequest{Tool: tool, Kind: kind, Subject: name}
	if p, err := workspace.ResolvePath(g.cwd, name); err == nil {
		req.Resolved = workspace.ResolvedSubject(p)
	}
	d, _, _ := g.rules(req, 0)
	return d == policy.RuleDeny
}

// maxOtherNameEntries bounds the directory entries read to find whether
// a wildcard deny rule names another hard link of a file: the search
// tools' bound (search.MaxVisited).
const maxOtherNameEntries = 500_000

// ruleDecision applies the settings rules to req (rules), searching for
// a multiply linked file's other names up to maxOtherNameEntries. note,
// when set, says why a deny holds beyond the rule's own words.
func (g *gate) ruleDecision(req workspace.PermissionRequest) (rule policy.Rule, text, note string) {
	return g.rules(req, maxOtherNameEntries)
}

// rules applies the settings rules to req over the path as written and
// as resolved (policy.Rules). Allowing a path outside the cwd or a
// protected path takes a rule that names it (a pattern), never a rule for
// the whole tool.
//
// The rules are the root's project's: relative paths in them are read
// against the project root. A child with a cwd of its own (a worktree)
// matches them against its own paths first, so they hold inside its
// worktree, then against the same file's path in the project (projectView),
// where only a deny or an ask counts: the parent's checkout stays outside
// the child (an allow there does not carry over), but "deny
// read(config/prod.yml)" still denies the parent's file.
func (g *gate) rules(req workspace.PermissionRequest, maxEntries int) (policy.Rule, string, string) {
	pol := g.s.policyFor(g.root, g.rootCwd)
	if pol == nil {
		return policy.RuleNone, "", ""
	}
	rule, text := policy.Rules(pol, req.Tool, req.Kind, policy.Subject{Lexical: req.Subject, Resolved: req.Resolved},
		req.OutsideCwd || req.Protected != "")
	if rule != policy.RuleDeny && g.cwd != g.rootCwd && req.Subject != "" && req.Resolved != "" {
		if pr, pt := policy.Rules(pol, req.Tool, req.Kind, g.projectView(req), true); pr == policy.RuleDeny ||
			pr == policy.RuleAsk && rule != policy.RuleAsk {
			rule, text = pr, pt
		}
	}
	if rule != policy.RuleDeny && req.Resolved != "" {
		// A hard link is a name no rule saw: a deny rule for the same file
		// under its other name still denies.
		abs := req.Resolved
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(g.cwd, abs) // the same file as under the real cwd
		}
		bases := []string{g.rootCwd}
		if g.cwd != g.rootCwd {
			bases = append(bases, g.cwd)
		}
		q := rootpolicy.OtherNames{Tool: req.Tool, Kind: req.Kind, Bases: bases, MaxEntries: maxEntries}
		if d, ok := pol.DeniedByAnotherName(q, abs); ok {
			note := ""
			if d.Cut {
				note = fmt.Sprintf("the file has more than one hard link, and finding whether this rule names one of its "+
					"other names stopped after %d directory entries, so it is refused unchecked", maxEntries)
			}
			return policy.RuleDeny, d.Rule, note
		}
	}
	return rule, text, ""
}

// projectView is req's subject as the project's rules read it: its
// written and resolved paths relative to the root's cwd (its real cwd for
// the resolved one) when inside it, else absolute.
func (g *gate) projectView(req workspace.PermissionRequest) policy.Subject {
	lexical := req.Subject
	if !filepath.IsAbs(lexical) {
		lexical = filepath.Join(g.cwd, lexical)
	}
	realCwd, realRootCwd := g.realDirs()
	resolved := req.Resolved
	if !filepath.IsAbs(resolved) {
		resolved = filepath.Join(realCwd, resolved)
	}
	return policy.Subject{
		Lexical:  workspace.DisplayPath(g.rootCwd, filepath.Clean(lexical)),
		Resolved: workspace.DisplayPath(realRootCwd, filepath.Clean(resolved)),
	}
}

// realDirs is the gate's cwd and root cwd with symlinks resolved,
// resolved once (a search asks for every file it walks).
func (g *gate) realDirs() (cwd, rootCwd string) {
	g.realOnce.Do(func() { g.realCwd, g.realRootCwd = realDir(g.cwd), realDir(g.rootCwd) })
	return g.realCwd, g.realRootCwd
}

// realDir is dir with its symlinks resolved (dir itself where that fails).
func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
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
