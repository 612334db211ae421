package cli

// This file defines "sessions repair ID": a session log with a bad line
// in the middle is repaired instead of lost. The whole file is kept in a
// .broken backup first; then each bad line is dropped on its own and every
// valid event kept, after the person agrees (or with --yes).

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/acp-agent/acp-agent/app"
	"strconv"
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
)

func sessionsRepairCommand() Command {
	var yes bool
	return Command{
		Name:    "repair",
		Usage:   "sessions repair [--data-dir DIR] [--yes] ID",
		Summary: "repair a session log with bad lines in the middle",
		Description: `Backs up the whole log (ID.jsonl.broken, or .broken.N when that exists),
then drops each bad line on its own and keeps every valid event; a
session/repaired record says which lines were dropped. Both files are
written whole and renamed into place, so an interrupted repair leaves the
old log or the new one. Asks first unless --yes. The session must not be
open in a running agent.`,
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
		// What the log shows instead (an earlier repair, a torn last line
		// the next load drops), worded as every command words it.
		var notes []string
		if snap, ierr := st.Inspect(ctx, id); ierr == nil {
			if sum, ok := session.Repaired(snap.Events); ok {
				notes = append(notes, persistence.RepairedDamage(id, app.LogPath(st, id), sum).Text())
			}
			if snap.Torn {
				notes = append(notes, persistence.TornDamage(id, app.LogPath(st, id), len(snap.Events)-snap.Synthetic+2).Text())
			}
		}
		msg := fmt.Sprintf("session %s has no bad line: nothing to repair", id)
		if len(notes) > 0 {
			msg += "; " + strings.Join(notes, "; ")
		}
		_, err = fmt.Fprintln(env.Stdout, msg)
		return err
	}
	if err != nil {
		return sessionError(id, err)
	}
	fmt.Fprintf(env.Stdout, "session %s: %s\n", id, app.Reason(&persistence.CorruptError{ID: id, Path: plan.Path, Line: plan.Line, Offset: plan.Offset, Err: plan.Cause}))
	lines := make([]string, len(plan.Dropped))
	for i, d := range plan.Dropped {
		lines[i] = strconv.Itoa(d.Line)
	}
	what := fmt.Sprintf("drop %d bad line(s) (%s)", len(plan.Dropped), strings.Join(lines, ", "))
	if len(plan.Dropped) == 0 {
		what = "drop no line"
	}
	if plan.Fillers > 0 {
		what += fmt.Sprintf(", mark %d missing event(s)", plan.Fillers)
	}
	fmt.Fprintf(env.Stdout, "repair will %s and keep all %d valid events; the whole file is backed up first\n", what, plan.Kept)
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
