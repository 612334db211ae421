package gitrun

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
)

// SafeArgs are the options put before every git command the agent runs:
// no fsmonitor, no hook, no background maintenance, and no signing
// program (gpg.program runs on a commit or merge when commit.gpgSign is
// set, and on a merge when merge.verifySignatures is), no recursion into
// submodules (a submodule's update command is a config line).
var SafeArgs = []string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
	"-c", "commit.gpgSign=false", "-c", "merge.verifySignatures=false", "-c", "log.showSignature=false", "-c", "submodule.recurse=false"}

// textMerge is the command a custom merge driver of the repository's
// config is replaced with: git's own three-way text merge, the default
// driver's, as a driver command (the result in %A, a conflict as a
// non-zero exit). It runs in git's environment, our -c options included.
const textMerge = "git merge-file --quiet %A %O %B"

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
// driver the config of dir's repository names (clean, smudge, process),
// and replace every merge driver it names (merge.<driver>.driver, picked
// by a merge attribute or by merge.default) with git's own text merge.
func FilterOverrides(ctx context.Context, path, dir string, env []string) []string {
	cmd := exec.CommandContext(ctx, path, append(append([]string(nil), SafeArgs...), "config", "-z", "--name-only", "--get-regexp", `^(filter|merge)\.`)...)
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
		raw := strings.TrimSpace(string(name))
		section, rest, ok := strings.Cut(raw, ".")
		section = strings.ToLower(section)
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue // merge.tool, merge.default and the like: no driver
		}
		// The driver keeps its case in the config's subsection; git
		// matches the attribute's value to it exactly, so use the name
		// as written.
		driver := rest[:i]
		if seen[section+"."+driver] {
			continue
		}
		seen[section+"."+driver] = true
		switch section {
		case "filter":
			for _, k := range []string{"clean=", "smudge=", "process=", "required=false"} {
				args = append(args, "-c", "filter."+driver+"."+k)
			}
		case "merge":
			args = append(args, "-c", "merge."+driver+".driver="+textMerge)
		}
	}
	return args
}
