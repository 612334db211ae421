package settings

import "strings"

// secretPatterns are the variable names left out of commands' environment
// by default (case-insensitive, "*" wildcards), like Codex's default shell
// environment policy.
var secretPatterns = []string{"*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"}

// CommandEnv is the environment given to commands: environ without the
// provider's key variables (keyVars, always dropped, whatever include
// says), without every name matching the secret patterns unless e.Include
// keeps it, and without every name e.Exclude names.
func CommandEnv(environ, keyVars []string, e Env) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !Dropped(name, keyVars, e) {
			out = append(out, kv)
		}
	}
	return out
}

// DroppedNames are the names of environ that CommandEnv leaves out (the
// client terminal unsets them, since it starts from the editor's
// environment, not ours).
func DroppedNames(environ, keyVars []string, e Env) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && Dropped(name, keyVars, e) {
			out = append(out, name)
		}
	}
	return out
}

// Dropped reports whether variable name is left out of commands.
func Dropped(name string, keyVars []string, e Env) bool {
	for _, k := range keyVars {
		if k != "" && strings.EqualFold(k, name) {
			return true
		}
	}
	if matchAnyFold(e.Exclude, name) {
		return true
	}
	return matchAnyFold(secretPatterns, name) && !matchAnyFold(e.Include, name)
}

func matchAnyFold(patterns []string, name string) bool {
	up := strings.ToUpper(name)
	for _, p := range patterns {
		if globAny(strings.ToUpper(p), up) {
			return true
		}
	}
	return false
}
