// Package agentdef finds and parses agent definitions: the files in which
// a team defines the subagents its model may pick by name.
//
// Three formats are read:
//
//   - ours, .acp-agent/agents/<name>.md in the project (every directory from
//     the git root down to the cwd) and $XDG_CONFIG_HOME/acp-agent/agents/
//     for the user: YAML frontmatter (name, description, tools,
//     disallowedTools, model, mode, permissionMode, maxTurns, isolation),
//     the body being the agent's instructions;
//   - Claude Code's, .claude/agents/*.md (and ~/.claude/agents/), mapped to
//     ours (tool names translated where they mean the same);
//   - Codex's, .codex/agents/*.toml (and ~/.codex/agents/), with
//     developer_instructions as the body.
//
// Precedence for one name: a project file over a user file, then ours over
// Claude Code's over Codex's, then the directory nearest the cwd. A file
// that loses is reported (shadowed or duplicate); a malformed file is
// reported with its file, line and why, and skipped. Nothing here is fatal.
//
// The package parses only: it imports nothing of the module but the walk
// from the git root down to the cwd (internal/levels, shared with the
// AGENTS.md lookup of agent/prompt): no agent runtime, no settings, no
// tools, so the runtime and the tools decide what a definition may do.
// internal/layering keeps it a leaf.
package agentdef
