package app

// This file wires agent definitions (package agent/agentdef) into the
// composition: each session loads the definitions of its directory when
// it starts, its `subagent` tool offers them, the person's settings
// decide what a project's definition may ask for, and /agents and
// "agents --definitions" show them.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/prompt"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/skilltool"
	"github.com/acp-agent/acp-agent/subagent"
)

// EnvDefinitions set to 1 makes "agents" print the agent definitions
// (the --definitions flag).
const EnvDefinitions = "ACP_AGENT_AGENTS_DEFINITIONS"

// DefinitionOptions says where the definitions of cwd are looked up.
// Scenario runs (PromptConfig.UserInstructions "-") read no user files.
func DefinitionOptions(cwd string, pc PromptConfig, getenv func(string) string) agentdef.Options {
	o := agentdef.UserOptions(cwd, prompt.FindGitRoot(cwd), getenv)
	if pc.UserInstructions == "-" {
		o.ConfigHome, o.Home = "", ""
	}
	return o
}

// definitions loads the agent definitions of cwd and logs what was
// reported about them.
func (a *App) definitions(cwd string) *agentdef.Set {
	if cwd == "" {
		return &agentdef.Set{}
	}
	set := agentdef.Load(DefinitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
	for _, p := range set.Problems {
		if p.Skipped {
			a.Log.Warn("agent definition skipped", "problem", p.String())
		} else {
			a.Log.Info("agent definition field not mapped", "problem", p.String())
		}
	}
	return set
}

// withDefinitions returns tools with what a session in cwd gets from its
// directory: the `subagent` tool replaced by one offering the agent
// definitions of cwd (when there are any and a subagent tool), and the
// `skill` tool over its skills appended (when it has some); tools as they
// are otherwise.
func (a *App) withDefinitions(tools []tool.Tool, cwd string) []tool.Tool {
	skills := a.skills(cwd)
	out := tools
	if a.Subagents != nil {
		if set := a.definitions(cwd); set.Len() > 0 {
			out = make([]tool.Tool, len(tools))
			for i, t := range tools {
				out[i] = t
				if t.Spec().Name == subagent.SubagentToolName {
					out[i] = subagent.NewSubagentToolWith(a.Subagents, &subagent.AgentChoices{Set: set, Skills: skills, Check: a.checkDefinition(cwd), RootMode: a.rootMode})
				}
			}
		}
	}
	if skills.Len() > 0 {
		out = append(slices.Clone(out), skilltool.New(skills))
	}
	if a.Subagents != nil && inGitRepository(cwd) {
		// Merge-back of worktree children is offered where they can be:
		// in a git repository.
		out = append(slices.Clone(out), subagent.WorktreeTools(a.Subagents, a.Workspace())...)
	}
	return out
}

// inGitRepository reports whether cwd or one of its ancestors holds a
// .git entry (a few stat calls; git itself is not run).
func inGitRepository(cwd string) bool {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return false
	}
	for dir := filepath.Clean(cwd); ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}

// rootMode is the permission mode in force for caller's root session
// ("" when it cannot be told: a capped mode is then not reported).
func (a *App) rootMode(ctx context.Context, caller *agent.Agent) policy.Mode {
	if a.Server == nil {
		return ""
	}
	m, err := a.Server.RootMode(ctx, caller.SessionID())
	if err != nil {
		a.Log.Warn("tell the root session's mode for a delegation", "session_id", caller.SessionID(), "err", err)
		return ""
	}
	return policy.Mode(m)
}

// sessionTools is the tool registry of a top-level session in cwd: the
// configured tools, with the `subagent` tool offering the definitions of
// cwd and the `skill` tool over its skills (withDefinitions).
func (a *App) sessionTools(cwd string) *tool.Registry {
	var in []tool.Tool
	if t, ok := a.Tools.Get(subagent.SubagentToolName); ok {
		in = []tool.Tool{t}
	}
	out := a.withDefinitions(in, cwd)
	if len(out) == len(in) && (len(in) == 0 || out[0] == in[0]) {
		return a.Tools
	}
	replaced := map[string]bool{}
	for _, t := range out {
		replaced[t.Spec().Name] = true
	}
	reg := a.Tools.With(func(name string) bool { return !replaced[name] })
	for _, t := range out {
		if err := reg.Add(t); err != nil {
			a.Log.Warn("agent definitions or skills not offered", "cwd", cwd, "err", err)
			return a.Tools
		}
	}
	return reg
}

// checkDefinition refuses what a project's definition asks for and the
// person's settings do not grant: a file in the repository cannot raise
// the permission mode to bypass, nor allow a tool the settings deny. A
// user definition is the person's own choice (the gate still asks and
// denies per call).
func (a *App) checkDefinition(cwd string) func(*agentdef.Definition) error {
	return func(d *agentdef.Definition) error {
		if d.Scope != agentdef.ScopeProject {
			return nil
		}
		if d.PermissionMode == agentdef.PermissionBypass {
			return fmt.Errorf("agent %q (%s) asks for permission mode \"bypass\", which a project's agent file cannot grant; "+
				"only the person can switch a session to bypass. Delegate without agent, or ask the person", d.Name, d.File)
		}
		pol := settings.Load(a.Config.SettingsFile, cwd)
		for _, name := range d.Tools {
			kind := ""
			if t, ok := a.Tools.Get(name); ok {
				if k, ok := t.(tool.Kind); ok {
					kind = k.Kind()
				}
			}
			if dec, rule := pol.Decide(settings.Call{Tool: name, Kind: kind}); dec == settings.Deny {
				return fmt.Errorf("agent %q (%s) asks for tool %q, which the settings deny (rule %q); a project's agent file cannot grant it", d.Name, d.File, name, rule)
			}
		}
		return nil
	}
}

// WriteDefinitions renders a definition set: one block per agent (name,
// source file, model, mode, isolation), then what was reported. Paths
// inside cwd are shown relative to it.
func WriteDefinitions(w io.Writer, set *agentdef.Set, cwd string) error {
	b := bufio.NewWriter(w)
	show := func(p string) string {
		if cwd != "" {
			if r, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	if set.Len() == 0 {
		b.WriteString("  (no agent definitions)\n")
	}
	for _, d := range set.Defs {
		model := d.Model
		if model == "" {
			model = "inherit"
		}
		fmt.Fprintf(b, "  %s — %s\n", d.Name, oneLine(d.Description, 100))
		fmt.Fprintf(b, "      file: %s (%s, %s)\n", show(d.File), d.Scope, d.Format)
		if e := d.External; e != nil {
			fmt.Fprintf(b, "      external agent: %s\n", e.CommandLine())
			if len(e.Env) > 0 {
				fmt.Fprintf(b, "      env: %s\n", strings.Join(e.Env, ", "))
			}
			fmt.Fprintf(b, "      mode: %s, isolation: %s", d.Mode, d.Isolation)
			if d.PermissionMode != "" {
				fmt.Fprintf(b, ", permissionMode: %s", d.PermissionMode)
			}
			for _, p := range []struct {
				key string
				v   *bool
			}{{"loadSession", e.LoadSession}, {"resume", e.Resume}} {
				if p.v != nil {
					fmt.Fprintf(b, ", %s: %v", p.key, *p.v)
				}
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(b, "      model: %s, mode: %s, isolation: %s", model, d.Mode, d.Isolation)
		if d.MaxTurns > 0 {
			fmt.Fprintf(b, ", maxTurns: %d", d.MaxTurns)
		}
		if d.PermissionMode != "" {
			fmt.Fprintf(b, ", permissionMode: %s", d.PermissionMode)
		}
		b.WriteString("\n")
		if d.Tools != nil {
			fmt.Fprintf(b, "      tools: %s\n", listOrNone(d.Tools))
		}
		if d.DisallowedTools != nil {
			fmt.Fprintf(b, "      disallowedTools: %s\n", listOrNone(d.DisallowedTools))
		}
	}
	if len(set.Problems) > 0 {
		fmt.Fprintf(b, "Reported (%d):\n", len(set.Problems))
		for _, p := range set.Problems {
			p.File = show(p.File)
			tag := "note"
			if p.Skipped {
				tag = "skipped"
			}
			fmt.Fprintf(b, "  [%s] %s\n", tag, p.String())
		}
	}
	return b.Flush()
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return strings.Join(l, ", ")
}

// oneLine folds s onto one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
