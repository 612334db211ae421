package cli

// This file defines the "agents" command: the durable subagent catalog of
// a stored session printed as a tree, or the agent definitions of a
// directory.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/subagent"
)

func agentsCommand() Command {
	var descendants, definitions bool
	return Command{
		Name:    "agents",
		Usage:   "agents [--data-dir DIR] [--descendants] SESSION_ID\nagents --definitions [DIR]\nagents [--data-dir DIR] merge [--squash] SUBAGENT_ID\nagents [--data-dir DIR] discard SUBAGENT_ID",
		Summary: "print the subagents of a stored session as a tree, or the agent definitions (read-only)",
		Description: `Prints the session's subagents from the durable catalog: id, mode,
activity and label of each, as the /agents slash command and the
_acp-agent/subagents/list extension show them. Nothing is locked or resumed.

With --definitions it prints the agent definitions a session in DIR (default
the current directory) would offer: name, source file, model, mode and
isolation of each, then every file that was skipped or not fully mapped,
with its line and why.

merge merges the work of a settled subagent that ran in its own git worktree
(committed on its branch acp-agent/ID when it settled) into the branch
checked out where its parent works; --squash makes it one new commit. A
conflict aborts the merge, changes nothing and names the files. discard
drops that work. Either way the worktree and its branch are then removed.
A subagent that another acp-agent process runs is left alone.`,
		Examples: []string{
			"acp-agent agents 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent agents --descendants 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent agents --definitions",
			"acp-agent agents merge --squash 9b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a40",
		},
		Common: []string{CommonDataDir},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&descendants, "descendants", false, "walk the whole tree below the session, not only its direct children")
			fs.BoolVar(&definitions, "definitions", false, "print the agent definitions of DIR (default the current directory) instead (env "+app.EnvDefinitions+"=1)")
		},
		Run: func(ctx context.Context, env *Env, args []string) error {
			if definitions || env.Getenv(app.EnvDefinitions) == "1" {
				return runDefinitions(env, args)
			}
			if _, _, ok, _ := app.ParseMergeBack(args); ok {
				return runMergeBack(ctx, env, args)
			}
			return runAgents(ctx, env, descendants, args)
		},
	}
}

// runDefinitions prints the agent definitions of one directory.
func runDefinitions(env *Env, args []string) error {
	cwd, err := dirArg("agents --definitions", args)
	if err != nil {
		return err
	}
	set := agentdef.Load(app.DefinitionOptions(cwd, app.PromptConfig{}, env.Getenv))
	fmt.Fprintf(env.Stdout, "Agent definitions of %s (%d):\n", cwd, set.Len())
	return app.WriteDefinitions(env.Stdout, set, cwd)
}

// runAgents prints the catalog of one session from disk. It opens storage
// read-only in effect: it scans the catalog index, reads cache rows and
// inspects logs, and never locks, repairs or resumes a session (the only
// file it may write is the derived index, when it had to rebuild rows).
func runAgents(ctx context.Context, env *Env, descendants bool, args []string) error {
	id, st, err := openOneSession(env, "agents", args)
	if err != nil {
		return err
	}
	defer st.Close()
	// An unknown id is an error, not an empty tree.
	if _, err := st.Header(ctx, id); err != nil {
		return sessionError(id, err)
	}
	cat, err := app.OpenCatalog(st)
	if err != nil {
		return err
	}
	if descendants {
		entries, err := cat.ListDescendants(ctx, id)
		if err != nil {
			return err
		}
		return app.WriteTree(ctx, env.Stdout, id, entries, nil)
	}
	entries, err := cat.ListChildren(ctx, id)
	if err != nil {
		return err
	}
	tree := make([]subagent.DescendantEntry, len(entries))
	for i, e := range entries {
		tree[i] = subagent.DescendantEntry{ListEntry: e, ParentID: id, Depth: 1}
	}
	return app.WriteTree(ctx, env.Stdout, id, tree, nil)
}

// dirArg is the one optional DIR argument of a read-only listing command
// (default the current directory), made absolute and checked to be a
// directory; what is wrong is a usage error naming the command.
func dirArg(command string, args []string) (string, error) {
	if len(args) > 1 {
		return "", usageErrorf("%s: want at most one directory, got %d arguments", command, len(args))
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	cwd, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", usageErrorf("%s: %s is not a directory", command, dir)
	}
	return cwd, nil
}

// runMergeBack merges or discards one worktree child's work (agents merge
// and agents discard).
func runMergeBack(ctx context.Context, env *Env, args []string) error {
	if _, _, _, err := app.ParseMergeBack(args); err != nil {
		return usageErrorf("agents %v", err)
	}
	st, err := openReadStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	out, err := app.MergeBack(ctx, st, args)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, out)
	return nil
}
