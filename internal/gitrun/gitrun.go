package gitrun

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
)

// SafeArgs are the options put before every git command the agent runs.
var SafeArgs = []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "maintenance.auto=false"}

// hardening are the variables every git the agent runs gets.
var hardening = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
	"GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C",
}

// Env is base without any GIT_* variable, plus the hardening variables,
// plus extra (the caller's own, GIT_INDEX_FILE of a temporary index, say,
// or fixed dates in tests).
func Env(base []string, extra ...string) []string {
	out := make([]string, 0, len(base)+len(hardening)+len(extra))
	for _, kv := range base {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, hardening...)
	return append(out, extra...)
}

// Command returns git (path, "" for "git" from PATH) with args run in dir:
// the hardened environment (Env of the process's, plus extra) and SafeArgs
// with every configured filter driver turned off. Finding the filters runs
// git once more (git config); its failure (no repository yet, say) leaves
// none to turn off.
func Command(ctx context.Context, path, dir string, extra []string, args ...string) *exec.Cmd {
	if path == "" {
		path = "git"
	}
	env := Env(os.Environ(), extra...)
	full := append(append(append([]string(nil), SafeArgs...), FilterOverrides(ctx, path, dir, env)...), args...)
	cmd := exec.CommandContext(ctx, path, full...)
	cmd.Dir = dir
	cmd.Env = env
	Group(cmd)
	return cmd
}

// FilterOverrides returns the -c options that turn off every filter
// driver the config of dir's repository names (clean, smudge, process).
func FilterOverrides(ctx context.Context, path, dir string, env []string) []string {
	cmd := exec.CommandContext(ctx, path, append(append([]string(nil), SafeArgs...), "config", "-z", "--name-only", "--get-regexp", `^filter\.`)...)
	cmd.Dir = dir
	cmd.Env = env
	// Killed as a group when ctx ends, and not waited on past that for
	// pipes a leftover child holds: the caller's timeout bounds this too.
	Group(cmd)
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var args []string
	for _, name := range bytes.Split(out, []byte{0}) {
		key := strings.TrimPrefix(strings.ToLower(string(bytes.TrimSpace(name))), "filter.")
		i := strings.LastIndexByte(key, '.')
		if i <= 0 {
			continue
		}
		// The driver keeps its case in the config's subsection; git
		// matches the attribute's value to it exactly, so use the name
		// as written.
		raw := strings.TrimSpace(string(name))
		driver := raw[len("filter.") : len("filter.")+i]
		if seen[driver] {
			continue
		}
		seen[driver] = true
		for _, k := range []string{"clean=", "smudge=", "process=", "required=false"} {
			args = append(args, "-c", "filter."+driver+"."+k)
		}
	}
	return args
}
