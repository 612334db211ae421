// Package gitrun is the one way the agent runs git itself (the environment
// probe of agent/prompt, the worktrees of subagent/worktree, the
// repository a scenario asks for): never the model's commands, which are
// the person's to approve.
//
// A repository's files are not the person's word: the model, a sandboxed
// command on a kernel without mount namespaces, or a clone may have written
// its config and attributes. So every git the agent runs
//
//   - inherits no GIT_* variable of the agent's environment: GIT_DIR,
//     GIT_WORK_TREE, GIT_INDEX_FILE, GIT_OBJECT_DIRECTORY,
//     GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_COMMON_DIR, GIT_NAMESPACE,
//     GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT and the rest (an agent started
//     from a git hook has GIT_DIR and GIT_INDEX_FILE set: a worktree add
//     would then write the index being committed);
//   - gets the hardening variables GIT_CONFIG_NOSYSTEM=1 and
//     GIT_ATTR_NOSYSTEM=1 (no /etc/gitconfig or system attributes),
//     GIT_TERMINAL_PROMPT=0 (never waits on a prompt), GIT_NO_REPLACE_OBJECTS=1,
//     GIT_OPTIONAL_LOCKS=0 (a status takes no index lock) and LC_ALL=C (the
//     messages the callers read);
//   - runs with -c core.fsmonitor=false, -c core.hooksPath=/dev/null,
//     -c gc.auto=0 and -c maintenance.auto=false (no fsmonitor, no hook, no
//     background maintenance), -c commit.gpgSign=false,
//     -c merge.verifySignatures=false and -c log.showSignature=false (no
//     gpg.program on a commit or a merge), -c submodule.recurse=false, and
//     with every filter driver the config names turned off: -c
//     filter.<driver>.clean= -c ….smudge= -c ….process= -c
//     ….required=false, and every merge driver it names (picked by a merge
//     attribute or merge.default) replaced with git's own text merge (git
//     merge-file), both found by a `git config --get-regexp` first
//     (reading config runs nothing). Options given with -c take precedence
//     over every config file.
//
// Every git the agent runs goes through here: internal/layering's
// TestGitStartsOnlyThroughGitrun fails on a product file that starts git
// by name another way.
//
// Callers still pass --no-textconv --no-ext-diff to diff.
//
// Layering: the standard library only.
package gitrun
