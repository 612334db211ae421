package scenarios

import (
	"context"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/app"
)

// Command is the "acp-agent scenario" command: "list" prints the embedded
// scenarios with their one-line summaries, "run NAME" runs one against the
// real composition in a temporary directory and prints its transcript. It
// needs no model configuration and no API key.
func Command() app.Command {
	return app.Command{
		Name:    "scenario",
		Summary: "list or run the built-in scripted scenarios (no API key needed)",
		Description: `Each scenario drives the real agent with a scripted model and a scripted
editor, in a temporary directory, and prints what the editor saw.`,
		Examples: []string{"acp-agent scenario list", "acp-agent scenario run subagent-fork"},
		Sub: []app.Command{{
			Name:     "list",
			Usage:    "scenario list",
			Summary:  "list the scenarios, each with its summary",
			Examples: []string{"acp-agent scenario list"},
			Run: func(ctx context.Context, env *app.Env, args []string) error {
				if len(args) > 0 {
					return &app.UsageError{Err: fmt.Errorf("scenario list: unexpected argument %q", args[0])}
				}
				for _, n := range Names() {
					sc, err := Load(n)
					if err != nil {
						return err
					}
					fmt.Fprintf(env.Stdout, "%-32s %s\n", n, summary(sc))
				}
				return nil
			},
		}, {
			Name:    "run",
			Usage:   "scenario run NAME",
			Summary: "run one scenario and print its transcript",
			Description: `Runs the scenario in a fresh temporary data directory and cwd (removed
afterwards) and prints, as plain text: the scenario's description; the
editor's steps, numbered, each with what it got back (session ids, stop
reasons, listings); then each session's transcript turn by turn (user
messages, tool calls and their results, the agent's replies, how each turn
ended). The JSON-RPC messages themselves are not printed: the recorded
ones are in snapshots/NAME/wire.golden of the source tree.`,
			Examples: []string{"acp-agent scenario run subagent-fork"},
			Run: func(ctx context.Context, env *app.Env, args []string) error {
				if len(args) != 1 {
					return &app.UsageError{Err: fmt.Errorf("scenario run: want one scenario NAME, got %d arguments (known: %s)", len(args), strings.Join(Names(), ", "))}
				}
				if _, err := Load(args[0]); err != nil {
					return &app.UsageError{Err: err}
				}
				return Run(ctx, args[0], env.Stdout)
			},
		}},
	}
}

// summaryWidth bounds a summary in "scenario list", so each scenario is one
// line of a terminal next to its name.
const summaryWidth = 72

// summary is the scenario's one-line summary; without one, the first
// sentence of its description. Either is cut to summaryWidth.
func summary(sc *Scenario) string {
	s := strings.Join(strings.Fields(sc.Summary), " ")
	if s == "" {
		s = strings.Join(strings.Fields(sc.Description), " ")
		if i := strings.Index(s, ". "); i >= 0 {
			s = s[:i+1]
		}
	}
	if r := []rune(s); len(r) > summaryWidth {
		s = strings.TrimRight(string(r[:summaryWidth-1]), " ,;:") + "…"
	}
	return s
}
