package app

// This file assembles the system prompt of each session (agent/prompt):
// identity and working rules, guidance for the tools it is offered, its
// environment block and the project's instructions, plus a child's
// delegation section. The agent records it in the log before the first
// model request, so it is computed once per session; its environment
// probe (git) starts when the session's agent is created.

import (
	"context"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/prompt"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// PromptConfig fixes what the system prompt's environment block would
// otherwise probe (scenario runs make it deterministic).
type PromptConfig struct {
	// OS, Arch and Shell override the probed values when set.
	OS, Arch, Shell string
	// NoGit skips the git commands (branch from .git/HEAD, dirty unknown).
	NoGit bool
	// UserInstructions is the user's instructions file; "" means
	// $XDG_CONFIG_HOME/acp-agent/AGENTS.md, "-" means none.
	UserInstructions string
	// InstructionsCap bounds the instructions; 0 means the default.
	InstructionsCap int
}

// DeterministicPrompt returns the prompt configuration of scenario runs:
// no host facts and no user instructions reach the recorded prompt.
func DeterministicPrompt() PromptConfig {
	return PromptConfig{OS: "linux", Arch: "amd64", Shell: "/bin/sh", NoGit: true, UserInstructions: "-"}
}

// promptSection is implemented by tools that teach the model something in
// the system prompt (background delegation).
type promptSection interface{ SystemPromptSection() string }

// systemPrompt returns the assembler of session s's system prompt and
// the start of its environment probe (agent.Options.SystemPrompt and
// PrepareSystem: the agent starts the probe when the session is created,
// and the assembler takes its result), or nils when Config.System fixes
// the prompt. get looks up the session's tools (for their prompt
// sections).
func (a *App) systemPrompt(s *session.Session, child bool, persona string, get func(string) (tool.Tool, bool)) (func(context.Context, []model.ToolSpec) string, func(context.Context)) {
	if a.Config.System != "" {
		return nil, nil
	}
	h := s.Header()
	pc := a.Config.Prompt
	getenv := a.Config.Getenv
	if pc.Shell != "" {
		getenv = func(k string) string {
			if k == "SHELL" {
				return pc.Shell
			}
			return a.Config.Getenv(k)
		}
	}
	probe := prompt.ProbeOptions{Now: time.UnixMilli(h.CreatedAt), Getenv: getenv, OS: pc.OS, Arch: pc.Arch, NoGit: pc.NoGit}
	pending := prompt.NewPending(h.Cwd, probe)
	return func(ctx context.Context, specs []model.ToolSpec) string {
		names := make([]string, 0, len(specs))
		var extra []string
		for _, sp := range specs {
			names = append(names, sp.Name)
			if t, ok := get(sp.Name); ok {
				if ps, ok := t.(promptSection); ok {
					extra = append(extra, ps.SystemPromptSection())
				}
			}
		}
		user := pc.UserInstructions
		switch user {
		case "":
			user = prompt.UserInstructionsFile(a.Config.Getenv)
		case "-":
			user = ""
		}
		return prompt.Assemble(ctx, prompt.Config{
			Cwd:      h.Cwd,
			Probe:    probe,
			Pending:  pending,
			UserFile: user,
			Cap:      pc.InstructionsCap,
			Input:    prompt.Input{Tools: names, Child: child, Persona: persona, Extra: extra, Client: a.clientPrompt(ctx, h.ID, child)},
			Roots:    a.sessionRoots(ctx, h.ID),
		})
	}, pending.Start
}

// anyImages reports whether some configured model takes images (what
// initialize advertises as promptCapabilities.image).
func anyImages(choices []ModelChoice) bool {
	for _, c := range choices {
		if c.Images() {
			return true
		}
	}
	return false
}

// imageInput reports whether top-level session id's current model takes
// images (acp.Options.ImageInput).
func (a *App) imageInput(id string) bool {
	if len(a.Models) == 0 {
		return false
	}
	if route := a.sessionRoute(id); route != nil {
		cur := route()
		for _, c := range a.Models {
			if c.Route == cur {
				return c.Images()
			}
		}
	}
	return a.Models[0].Images()
}

// thinkingSwitch reports whether top-level session id's current model
// thinks and can be asked not to (acp.Options.Thinking).
func (a *App) thinkingSwitch(id string) bool {
	if len(a.Models) == 0 {
		return false
	}
	if route := a.sessionRoute(id); route != nil {
		cur := route()
		for _, c := range a.Models {
			if c.Route == cur {
				return c.Model != nil && model.SwitchesThinking(c.Model)
			}
		}
	}
	return a.Models[0].Model != nil && model.SwitchesThinking(a.Models[0].Model)
}

// sessionNoThinking returns the agent's NoThinking: whether top-level
// session id's person turned thinking off (acp.Server.SessionNoThinking).
func (a *App) sessionNoThinking(id string) func() bool {
	return func() bool { return a.Server != nil && a.Server.SessionNoThinking(id) }
}

// sessionRoots are the additional workspace roots of session id (its root
// session's), as the ACP server holds them.
func (a *App) sessionRoots(ctx context.Context, id string) []string {
	if a.Server == nil {
		return nil
	}
	return a.Server.SessionRoots(ctx, id)
}

// clientPrompt is the system prompt the editor gave top-level session id
// (a child has none of its own).
func (a *App) clientPrompt(ctx context.Context, id string, child bool) string {
	if a.Server == nil || child {
		return ""
	}
	return a.Server.ClientSystemPrompt(ctx, id)
}
