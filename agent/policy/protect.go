package policy

import (
	"path/filepath"
	"strings"
)

// ProtectedRel says why writing the slash path rel (relative to the
// working directory, or absolute) can become a command, or "": git's
// directory at any depth (hooks, core.fsmonitor and other config run code
// the next time git runs), the agent's own project settings, and the
// editors' task, launch and settings files (Zed .zed/, VS Code .vscode/,
// JetBrains .idea/: the editor runs what they say).
func ProtectedRel(rel string) string {
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		switch strings.ToLower(part) {
		case ".git":
			return "a write under .git/ can run code the next time git runs (hooks, core.fsmonitor and other config)"
		case ".acp-agent":
			return "this is the agent's own settings directory (its permission rules)"
		case ".vscode", ".zed":
			if i+1 < len(parts) {
				switch strings.ToLower(parts[i+1]) {
				case "tasks.json", "launch.json", "settings.json", "debug.json":
					return "the editor runs the commands in its task, launch and settings files"
				}
			}
		case ".idea":
			return "the editor runs the commands in its run configurations (.idea/)"
		}
	}
	return ""
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
				return "this is the agent's own data directory (its sessions and records)"
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
