package agentdef

import (
	"fmt"
	"strings"
)

// claudeTools maps Claude Code's tool names to ours where they mean the
// same. MCP tools (mcp__server__tool) are named alike in both.
var claudeTools = map[string]string{
	"Bash":      "bash",
	"Read":      "read",
	"Write":     "write",
	"Edit":      "edit",
	"MultiEdit": "edit",
	"Glob":      "glob",
	"Grep":      "grep",
	"TodoWrite": "todo",
	"Task":      "subagent",
	"Agent":     "subagent",
}

// mapClaudeTools translates a Claude Code tool list. A tool with no
// counterpart is left out and reported: absent here, it can neither be
// allowed nor used. A tool with an argument pattern (Bash(git *)) is left
// out of an allow list (a pattern is narrower than the whole tool) and
// denies the whole tool in a deny list (wider, never looser).
func mapClaudeTools(list []string, allow bool, note func(string)) []string {
	out := make([]string, 0, len(list))
	add := func(n string) {
		for _, have := range out {
			if have == n {
				return
			}
		}
		out = append(out, n)
	}
	for _, t := range list {
		name, pattern, hasPattern := strings.Cut(t, "(")
		name = strings.TrimSpace(name)
		ours, ok := claudeTools[name]
		if !ok && strings.HasPrefix(name, "mcp__") {
			ours, ok = name, true
		}
		switch {
		case !ok:
			note(fmt.Sprintf("tool %q has no counterpart here: left out", t))
		case hasPattern && allow:
			note(fmt.Sprintf("tool %q: argument patterns (%s) are not supported in agent tool lists: %s left out (put the pattern in the settings' permission rules)", t, strings.TrimSuffix(pattern, ")"), ours))
		case hasPattern:
			note(fmt.Sprintf("tool %q: argument patterns are not supported in agent tool lists: all of %s is denied", t, ours))
			add(ours)
		default:
			add(ours)
		}
	}
	return out
}
