// Package agentdef finds and parses agent definitions: the files in which
// a team defines the subagents its model may pick by name.
//
// Seven formats are read, each from the project (every directory from the
// git root down to the cwd) and from the user's folder:
//
//   - ours, .acp-agent/agents/<name>.md and $XDG_CONFIG_HOME/acp-agent/
//     agents/: YAML frontmatter (name, description, tools,
//     disallowedTools, model, mode, permissionMode, maxTurns, skills,
//     isolation), the body being the agent's instructions;
//   - Claude Code's, .claude/agents/*.md (and ~/.claude/agents/), mapped to
//     ours (tool names translated where they mean the same; the model
//     aliases sonnet, opus and haiku to the current ids of the built-in
//     model table, ClaudeModelAliases);
//   - Codex's, .codex/agents/*.toml (and ~/.codex/agents/), with
//     developer_instructions as the body;
//   - Gemini CLI's, .gemini/agents/*.md (and ~/.gemini/agents/);
//   - Cursor's, .cursor/agents/*.md (and ~/.cursor/agents/): readonly is
//     plan mode, is_background the background (else the foreground);
//   - GitHub Copilot's, .github/agents/*.agent.md (and ~/.copilot/agents/);
//   - opencode's, .opencode/agents/*.md (and $XDG_CONFIG_HOME/opencode/
//     agents/): mode subagent or all, the denials of its permissions.
//
// Fields that mean the same are mapped; the rest are reported with file
// and line and ignored, never fatal. A mapping never widens: what a tool
// list cannot express is left out of an allow list and denies the whole
// tool in a deny list.
//
// Precedence for one name: a project file over a user file, then the
// formats in the order of Formats (ours, Claude Code, Codex, Gemini CLI,
// Cursor, Copilot, opencode), then the directory nearest the cwd. A file
// that loses is reported (shadowed or duplicate); a malformed file is
// reported with its file, line and why, and skipped.
//
// Files are read through internal/beneath: project files
// beneath the top of the walk (the git root), so a definition symlinked
// out of the repository is refused, as a tool's read would be; the
// person's own folders may link anywhere (a dotfiles checkout).
//
// The package parses only: it imports nothing of the module but the walk
// from the git root down to the cwd (internal/levels, shared with the
// AGENTS.md lookup of agent/prompt) and the reads beneath a root: no
// agent runtime, no settings, no tools, so the runtime and the tools
// decide what a definition may do. internal/layering keeps it a leaf.
package agentdef
