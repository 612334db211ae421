package subagent

// This file lets the `subagent` tool start a child from an agent
// definition (package agent/agentdef): the definition becomes the child's
// tool filter, persona, route, mode and turn limit, through the fields a
// start already has, and is recorded in the child's log (definition.go).

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// Codes of a call naming an agent.
const (
	// CodeUnknownAgent: the call named an agent no definition has.
	CodeUnknownAgent = "UNKNOWN_AGENT"
	// CodeAgentRefused: the definition asks for what the person's
	// settings do not grant (AgentChoices.Check).
	CodeAgentRefused = "AGENT_REFUSED"
	// CodeUnknownSkill: the definition preloads a skill the directory
	// does not have.
	CodeUnknownSkill = "UNKNOWN_SKILL"
)

// DefaultListedAgents caps how many agents the tool description lists.
const DefaultListedAgents = 20

// listedDescription caps one agent's description in the tool
// description, in runes.
const listedDescription = 200

const paramAgent = "Optional: the name of a defined agent to run (see the list in this tool's description). " +
	"Its instructions, tools, model and mode replace the defaults; omit it for a general-purpose subagent."

// AgentChoices are the agent definitions a delegation tool offers.
type AgentChoices struct {
	Set *agentdef.Set
	// Skills are the skills of the directory: a definition's skills:
	// are preloaded from them into the child's persona.
	Skills *skill.Set
	// Check refuses a definition the person's settings do not grant (a
	// project agent asking for bypass or a denied tool); nil grants all.
	Check func(*agentdef.Definition) error
	// Listed caps the agents the description lists (0:
	// DefaultListedAgents).
	Listed int
	// RootMode, when set, returns the current permission mode of the
	// caller's root session (the mode policy.ChildMode bounds a child's
	// by), so a definition's mode that is capped can be said (capNotes).
	RootMode func(ctx context.Context, caller *agent.Agent) policy.Mode
	// Since is when this session's writes began: a definition that widens
	// the permission mode is refused when its file changed at or after it
	// (the model may have written it, in a workspace that holds the
	// person's config folder). Zero means the process's start.
	Since time.Time
}

// processStart is when this process started: before it, no tool call of
// this process wrote anything.
var processStart = time.Now()

// widens reports whether a definition's permission mode can widen the
// root's (policy.ChildMode lets a user definition raise it).
func widens(mode string) bool {
	return mode == agentdef.PermissionBypass || mode == agentdef.PermissionAcceptEdits
}

// capNotes returns what the parent and the child are told when the
// permission mode opts' definition asks for is not the one the child
// runs in (policy.ChildMode, with the root's mode now): both "" when it
// is not capped, or the root's mode is not known.
func (c *AgentChoices) capNotes(ctx context.Context, caller *agent.Agent, label string, opts childOptions) (parent, child string, capped *ModeCap) {
	if c == nil || c.RootMode == nil || opts.permissionMode == "" || opts.definition == nil {
		return "", "", nil
	}
	root := c.RootMode(ctx, caller)
	if root == "" {
		return "", "", nil
	}
	asked := policy.Mode(opts.permissionMode)
	runs := policy.ChildMode(root, asked, opts.permissionScope)
	if runs == asked {
		return "", "", nil
	}
	var why string
	switch {
	case root == policy.ModePlan:
		why = "the session is in plan mode, which keeps every subagent read-only"
	case !policy.Known(asked):
		why = fmt.Sprintf("%q is not a permission mode this agent knows", asked)
	default:
		why = fmt.Sprintf("a definition from the project may not widen the session's mode (%s)", root)
	}
	name := opts.definition.Name
	parent = fmt.Sprintf("Note: subagent %q (agent %s) runs in %s mode, although its agent definition asks for %s: %s.", label, name, runs, asked, why)
	child = fmt.Sprintf("Note: you run in %s mode, although your agent definition (%s) asks for %s: %s. Your permission requests are decided in %s mode.", runs, name, asked, why, runs)
	return parent, child, &ModeCap{Asked: string(asked), Runs: string(runs)}
}

// ModeCap is a delegation result's account of a capped permission mode
// (raw output key "permissionMode").
type ModeCap struct {
	Asked string `json:"asked"`
	Runs  string `json:"runs"`
}

func (c *AgentChoices) offered() bool { return c != nil && c.Set.Len() > 0 }

// describe is the tool description's paragraph listing the agents.
func (c *AgentChoices) describe() string {
	limit := c.Listed
	if limit <= 0 {
		limit = DefaultListedAgents
	}
	var b strings.Builder
	b.WriteString("\n\nDefined agents (pass the name as `agent`; pick the one whose description fits the task):")
	for i, d := range c.Set.Defs {
		if i == limit {
			fmt.Fprintf(&b, "\n(%d more agents are defined but not listed here: %s)", len(c.Set.Defs)-limit, strings.Join(c.Set.Names()[limit:], ", "))
			break
		}
		desc := strings.Join(strings.Fields(d.Description), " ")
		if utf8.RuneCountInString(desc) > listedDescription {
			desc = string([]rune(desc)[:listedDescription-1]) + "…"
		}
		fmt.Fprintf(&b, "\n- %s: %s", d.Name, desc)
		if d.Mode == agentdef.ModeForeground {
			b.WriteString(" (runs in the foreground)")
		}
		if d.External != nil {
			b.WriteString(" (another ACP agent: " + d.External.Command + ")")
		}
	}
	return b.String()
}

// apply resolves name and returns base with the definition applied.
func (c *AgentChoices) apply(name string, base childOptions) (childOptions, error) {
	if !c.offered() {
		return base, &tool.Error{Code: CodeUnknownAgent, Message: fmt.Sprintf("unknown agent %q: no agents are defined here; call without agent", name)}
	}
	def, ok := c.Set.Get(name)
	if !ok {
		return base, &tool.Error{Code: CodeUnknownAgent, Message: fmt.Sprintf("unknown agent %q; the defined agents are: %s", name, strings.Join(c.Set.Names(), ", "))}
	}
	if def.Scope == agentdef.ScopeUser && widens(def.PermissionMode) {
		since := c.Since
		if since.IsZero() {
			since = processStart
		}
		if def.WrittenSince(since) {
			return base, &tool.Error{Code: CodeAgentRefused, Message: fmt.Sprintf("agent %q (%s) asks for permission mode %q, but its file changed after the agent started: "+
				"it may have been written in this session, and a definition that widens the permission mode is taken only from a file that predates the session. "+
				"Delegate without agent, or ask the person to restart the agent to use it", def.Name, def.File, def.PermissionMode)}
		}
	}
	if c.Check != nil {
		if err := c.Check(def); err != nil {
			return base, &tool.Error{Code: CodeAgentRefused, Message: err.Error(), Err: err}
		}
	}
	opts := base
	if def.Model != "" {
		provider, m, _ := strings.Cut(def.Model, "/")
		opts.route = &model.Route{Provider: provider, Model: m}
	}
	if def.Instructions != "" {
		opts.persona = def.Instructions
	}
	var preload []*skill.Skill
	var records []SkillRecord
	for _, name := range def.Skills {
		k, ok := c.Skills.Get(name)
		if !ok {
			return base, &tool.Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("agent %q (%s) preloads skill %q, which is not installed here; the skills are: %s",
				def.Name, def.File, name, strings.Join(c.Skills.Names(), ", "))}
		}
		preload = append(preload, k)
		records = append(records, SkillRecord{Name: k.Name, File: k.File, Hash: k.Hash})
	}
	if s := skill.Preload(preload); s != "" {
		// The bodies become part of the persona, which the descriptor
		// records: a cold resume runs with the text the child started
		// with, whatever the files say then.
		opts.persona = strings.TrimSpace(opts.persona + "\n\n" + s)
	}
	if def.Tools != nil || def.DisallowedTools != nil {
		opts.toolFilter = &ToolFilter{Allow: def.Tools, Deny: def.DisallowedTools}
	}
	opts.maxSteps = def.MaxTurns
	opts.limits = budgets.Limits{MaxTokens: def.MaxTokens, MaxCostUSD: def.MaxCostUSD, MaxTurns: def.MaxTurns, Timeout: def.Timeout}
	opts.background = base.background && def.Mode != agentdef.ModeForeground
	opts.definition = &AgentDefinition{
		Name: def.Name, Hash: def.Hash, File: def.File, Format: string(def.Format), Scope: string(def.Scope),
		Mode: string(def.Mode), MaxTurns: def.MaxTurns, PermissionMode: def.PermissionMode, Isolation: def.Isolation,
		Skills: records,
	}
	if e := def.External; e != nil {
		opts.provider = ExternalProvider
		opts.definition.External = &ExternalCommand{
			Command: e.Command, Args: e.Args, Env: e.Env, LoadSession: e.LoadSession, Resume: e.Resume,
		}
	}
	if def.Isolation == agentdef.IsolationWorktree {
		opts.isolation = IsolationWorktree
	}
	if def.PermissionMode != "" {
		// Who wrote it decides whether it may widen the root's mode
		// (policy.ChildMode); the settings check above refused bypass
		// from a project.
		opts.permissionMode, opts.permissionScope = def.PermissionMode, policy.GrantProject
		if def.Scope == agentdef.ScopeUser {
			opts.permissionScope = policy.GrantUser
		}
	}
	return opts, nil
}
