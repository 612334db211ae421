package app

// This file defines "sessions repair ID": a session log with a bad line
// in the middle is repaired instead of lost. The whole file is kept in a
// .broken backup first; then the bad line alone is dropped, or the log is
// cut at it, after the person agrees (or with --yes).

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/persistence"
)

func sessionsRepairCommand() Command {
	var yes bool
	return Command{
		Name:    "repair",
		Usage:   "sessions repair [--data-dir DIR] [--yes] ID",
		Summary: "repair a session log with a bad line in the middle",
		Description: `Backs up the whole log (ID.jsonl.broken, or .broken.N when that exists),
then drops the bad line when what follows still continues the log, or cuts
the log at it. Asks first unless --yes. The session must not be open in a
running agent.`,
		Examples: []string{"acp-agent sessions repair --yes 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10"},
		Common:   []string{CommonDataDir},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&yes, "yes", false, "repair without asking")
		},
		Run: func(ctx context.Context, env *Env, args []string) error {
			return runSessionsRepair(ctx, env, yes, args)
		},
	}
}

func runSessionsRepair(ctx context.Context, env *Env, yes bool, args []string) error {
	id, st, err := openOneSession(env, "sessions repair", args)
	if err != nil {
		return err
	}
	defer st.Close()
	plan, err := st.PlanRepair(ctx, id)
	if errors.Is(err, persistence.ErrNothingToRepair) {
		_, err = fmt.Fprintf(env.Stdout, "session %s has no bad line: nothing to repair\n", id)
		return err
	}
	if err != nil {
		return sessionError(id, err)
	}
	what := fmt.Sprintf("drop line %d", plan.Line)
	if !plan.Drop {
		what = fmt.Sprintf("cut the log at line %d (removing %d lines)", plan.Line, plan.Removed)
	}
	fmt.Fprintf(env.Stdout, "session %s: line %d of %s is bad: %v\n", id, plan.Line, plan.Path, plan.Cause)
	fmt.Fprintf(env.Stdout, "repair will %s and keep %d events; the whole file is backed up first\n", what, plan.Kept)
	if !yes {
		fmt.Fprint(env.Stdout, "repair? [y/N] ")
		answer, _ := bufio.NewReader(env.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			// Exit status 1: the log is still damaged.
			fmt.Fprintln(env.Stdout)
			return fmt.Errorf("session %s not repaired: the repair was declined (--yes repairs without asking)", id)
		}
	}
	backup, err := st.Repair(ctx, id, plan)
	if err != nil {
		return sessionError(id, err)
	}
	_, err = fmt.Fprintf(env.Stdout, "repaired session %s; the original is kept in %s\n", id, backup)
	return err
}
