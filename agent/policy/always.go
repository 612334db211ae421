package policy

import (
	"path"
	"strings"

	"github.com/acp-agent/acp-agent/agent/settings"
)

// AlwaysKey is what an "always" answer covers in a session: the tool kind
// for the workspace tools (all edits, all commands), the tool itself for
// any other tool with effects (one MCP tool, not every MCP tool).
func AlwaysKey(kind, tool string) string {
	if kind == KindOther && tool != "" {
		return "tool:" + tool
	}
	return kind
}

// AlwaysRule is the rule an "always allow" answer saves for the project,
// or "" when none is saved (outside and protected paths, and paths whose
// rule would cover other paths): the exact command for bash (its pattern
// characters escaped, so "rm -f *.o" covers that command only), the
// file's directory for an edit, the tool for another tool.
func AlwaysRule(kind, tool, subject string, class Class) string {
	switch {
	case class != Inside:
		return ""
	case kind == KindExecute && tool == "bash" && strings.TrimSpace(subject) != "":
		return "bash(" + settings.EscapePattern(strings.TrimSpace(subject)) + ")"
	case kind == KindEdit:
		rule, _ := EditRule(subject)
		return rule
	case kind == KindOther && tool != "":
		return tool
	}
	return ""
}

// EditRule is the rule an "always allow" answer to an edit of p
// (relative to the working directory) saves, and what it covers in words:
// the file's directory and everything under it ("edit(src/pkg/**)"), or
// the file itself at the top ("edit(./main.go)": without the "./" the
// pattern would match that name in every directory). "" when p holds
// pattern characters (a saved pattern would cover other paths) or is not
// below the working directory.
func EditRule(p string) (rule, covers string) {
	p = path.Clean(p)
	if p == "." || p == "/" || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsAny(p, "*?[]\\") {
		return "", ""
	}
	dir := path.Dir(p)
	if dir == "." {
		return "edit(./" + p + ")", "of " + p
	}
	return "edit(" + dir + "/**)", "under " + dir + "/"
}
