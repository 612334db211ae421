package policy

import (
	"path/filepath"
	"strings"
)

// The one protected set (issue 51): the permission gate (ProtectedRel),
// the sandbox's read-only binds and its guard (ProtectedEntry,
// ProtectedNames) all read these tables, so a name added here is asked
// about, kept read-only and moved aside alike.

// wholeNames are entries protected with everything below them, at any
// depth: a write there can become a command or a permission.
var wholeNames = map[string]string{
	".git":       "a write under .git/ can run code the next time git runs (hooks, core.fsmonitor and other config)",
	".acp-agent": "this is the agent's own settings directory (its permission rules, agent definitions and skills)",
	".idea":      "the editor runs the commands in its run configurations (.idea/)",
	// Other agents' folders: their settings run hooks and MCP servers,
	// their agent definitions and skills grant tools and modes (a
	// definition here could widen this agent's children too).
	".claude":   "another agent's configuration (Claude Code: hooks, MCP servers, agent definitions, skills) runs commands",
	".codex":    "another agent's configuration (Codex: config.toml, agent definitions) runs commands",
	".gemini":   "another agent's configuration (Gemini CLI: settings.json, MCP servers, agent definitions) runs commands",
	".cursor":   "another agent's configuration (Cursor: MCP servers, rules, agent definitions) runs commands",
	".opencode": "another agent's configuration (opencode: agents, commands, plugins) runs commands",
	".agents":   "agent skills and definitions (.agents/skills) give an agent instructions and tools",
	".mcp.json": "the project's MCP server list: an agent that reads it starts the commands it names",
	// Git's user config, where the working directory is the home
	// directory: core.fsmonitor, aliases and pagers there run on the
	// person's own git commands.
	".gitconfig": "git's user configuration runs commands (core.fsmonitor, aliases, pager) on every git command",
}

// pairNames are entries protected only below a given parent name: the
// editors' task, launch and settings files, GitHub's agent definitions,
// and the agents' user config folders under .config (a working directory
// that is the home directory holds them).
var pairNames = map[string]map[string]string{
	".vscode": {"tasks.json": editorFiles, "launch.json": editorFiles, "settings.json": editorFiles},
	".zed":    {"tasks.json": editorFiles, "launch.json": editorFiles, "settings.json": editorFiles, "debug.json": editorFiles},
	".github": {"agents": "agent definitions (.github/agents) give an agent instructions, tools and modes"},
	".config": {
		"acp-agent": "this is the agent's own user config folder (its settings, agent definitions and skills)",
		"opencode":  "another agent's configuration (opencode: agents, commands, plugins) runs commands",
		"git":       "git's user configuration runs commands (core.fsmonitor, aliases, pager) on every git command",
	},
}

const editorFiles = "the editor runs the commands in its task, launch and settings files"

// sandboxWhole are directories the sandbox keeps read-only whole though
// the gate protects only some files in them (a bind mount cannot follow
// the files a command may create there).
var sandboxWhole = map[string]bool{".vscode": true, ".zed": true}

// ProtectedRel says why writing the slash path rel (relative to the
// working directory, or absolute) can become a command or a permission,
// or "": git's directory at any depth, the agent's own and other agents'
// configuration, agent definition and skill folders of every format, and
// the editors' task, launch and settings files.
func ProtectedRel(rel string) string {
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		part = strings.ToLower(part)
		if why, ok := wholeNames[part]; ok {
			return why
		}
		if kids, ok := pairNames[part]; ok && i+1 < len(parts) {
			if why, ok := kids[strings.ToLower(parts[i+1])]; ok {
				return why
			}
		}
	}
	return ""
}

// ProtectedEntry reports whether the directory entry name, in a directory
// named parent, is one the sandbox keeps read-only (and moves aside when
// a command creates it), with everything below it.
func ProtectedEntry(parent, name string) bool {
	name = strings.ToLower(name)
	if _, ok := wholeNames[name]; ok || sandboxWhole[name] {
		return true
	}
	_, ok := pairNames[strings.ToLower(parent)][name]
	return ok
}

// ProtectedNames are the entry names whose creation at the top of a
// writable directory the sandbox's guard reacts to at once: the
// protected entries and the parents of the protected pairs.
func ProtectedNames() map[string]bool {
	out := map[string]bool{}
	for n := range wholeNames {
		out[n] = true
	}
	for n := range sandboxWhole {
		out[n] = true
	}
	for n := range pairNames {
		out[n] = true
	}
	return out
}

// Protector knows the protected targets that lie at fixed places: the
// agent's own user settings file and its data directory, wherever they
// are (inside a workspace when the working directory is the home
// directory or a dotfiles repository).
type Protector struct {
	// Files and Dirs are absolute paths; a Dir protects what is below it.
	Files, Dirs []string
}

// Reason says why a write to one of paths (absolute: the path as written
// and as resolved) can become a command, or "".
func (p Protector) Reason(paths ...string) string {
	for _, a := range paths {
		if a == "" {
			continue
		}
		a = filepath.Clean(a)
		for _, f := range p.Files {
			if f != "" && (a == filepath.Clean(f) || a == realOr(f)) {
				return "this is the agent's own user settings file (its permission rules)"
			}
		}
		for _, d := range p.Dirs {
			if d != "" && (within(filepath.Clean(d), a) || within(realOr(d), a)) {
				return "this is the agent's own data or config directory (its sessions, settings, agent definitions and skills)"
			}
		}
	}
	return ""
}

// realOr is p with symlinks resolved, or p cleaned when it does not
// resolve.
func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
