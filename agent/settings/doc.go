// Package settings owns the agent's settings files and the permission
// rules they hold: the user level ($XDG_CONFIG_HOME/acp-agent/settings.json)
// and the project level (<cwd>/.acp-agent/settings.json), each
//
//	{"permissions": {"allow": [...], "ask": [...], "deny": [...]},
//	 "env": {"include": [...], "exclude": [...]},
//	 "sandbox": {"enabled": bool, "writablePaths": [...], "network": bool},
//	 "context": {"window": N, "windows": {"PROVIDER/MODEL": N}, "compactThreshold": F}}
//
// Rules are tool patterns: "bash(go test *)", "edit(src/**)",
// "read(.env)", "mcp__github__*". In a command pattern a backslash makes
// the next character literal ("bash(rm -f \\*.o)" is that command only:
// the exact command an "always allow" answer saves is escaped). Deny wins over ask wins over allow. A
// project file may only tighten: add deny and ask rules, exclude more
// variables, turn the sandbox on and its network off. Allow rules, the
// context policy and writable paths outside the project come only from the
// user level, so a cloned repository cannot grant itself rights; a project
// setting that would loosen is reported (Ignored) and left out. A user-level rule may be scoped to one project
// directory ("always allow" answers are saved that way). A malformed file
// is reported (file, line, what is wrong) and nothing of it is applied.
//
// Layering: settings imports the standard library only; it knows nothing
// of ACP or of the tools (callers pass a tool name, kind and subject).
package settings
