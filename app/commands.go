package app

// This file wires the session features added on top of the core: the todo
// tool (plans), the slash commands offered to editors, and the per-session
// tools of MCP servers (acp.Options.NewAgentWithTools).

import (
	"context"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent"
)

// commands returns the slash commands of this composition.
func (a *App) commands() []acp.Command {
	return []acp.Command{{
		Name:        "agents",
		Description: "show the subagent tree of this session (from the durable catalog, without asking the model)",
		// "/agents merge [--squash] ID" and "/agents discard ID" merge
		// back or drop a worktree child's work (mergeback.go); no input
		// hint is offered, so the command's listing stays as it was.
		Run: a.agentsCommand,
	}, {
		Name:        "compact",
		Description: "summarize the conversation so far to free context (the full history stays in the log)",
		Hint:        "optional instructions for the summary",
		Run: func(ctx context.Context, sessionID, input string) (string, error) {
			ag, ok := a.Agents.Get(sessionID)
			if !ok {
				return "", fmt.Errorf("session %s is not live", sessionID)
			}
			d, err := ag.Compact(ctx, input)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Conversation compacted: about %d tokens before, %d after.", d.PreTokens, d.PostTokens), nil
		},
	}, a.skillsSlashCommand()}
}

// agentsText renders the subagent tree of a session as Markdown: the same
// rows as the "agents --descendants" command and the subagents/list
// extension.
func agentsText(ctx context.Context, cat *subagent.Catalog, id string, queued []subagent.QueuedStart) (string, error) {
	entries, err := cat.ListDescendants(ctx, id)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := WriteTree(ctx, &b, id, entries, queued); err != nil {
		return "", err
	}
	return fmt.Sprintf("Subagents of this session (%d):\n\n```text\n%s```\n", len(entries), b.String()), nil
}

// definitionsText renders the agent definitions of a session's directory
// as Markdown, "" when there are none and nothing was reported.
func (a *App) definitionsText(sessionID string) string {
	s, ok := a.Sessions.Get(sessionID)
	if !ok {
		return ""
	}
	cwd := s.Header().Cwd
	set := agentdef.Load(DefinitionOptions(cwd, a.Config.Prompt, a.Config.Getenv))
	if set.Len() == 0 && len(set.Problems) == 0 {
		return ""
	}
	var b strings.Builder
	if err := WriteDefinitions(&b, set, cwd); err != nil {
		return ""
	}
	return fmt.Sprintf("Agent definitions (%d):\n\n```text\n%s```\n\n", set.Len(), b.String())
}

// NewAgentWithTools builds the agent of a top-level session with extra
// session tools (its MCP servers' tools) next to the configured ones. A
// tool whose name is taken is left out (logged).
func (a *App) NewAgentWithTools(s *session.Session, extra []tool.Tool) (*agent.Agent, error) {
	opts := a.AgentOptions(s)
	reg := opts.Tools.Clone()
	for _, t := range extra {
		if err := reg.Add(t); err != nil {
			a.Log.Warn("session tool not offered", "session_id", s.ID(), "tool", t.Spec().Name, "err", err)
		}
	}
	opts.Tools = reg
	return agent.New(s, opts), nil
}
