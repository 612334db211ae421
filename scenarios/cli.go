package scenarios

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/app/cli"
)

// Command is the "acp-agent scenario" command: "list" prints the embedded
// scenarios with their one-line summaries, "run NAME" (or "run --dir
// DIR", a user's scenario directory) runs one against the real
// composition in a temporary directory and prints its transcript, and
// "test --dir DIR [--update]" compares a directory's replay with its
// goldens (dir.go). It needs no model configuration and no API key.
// It is long because it is the flag set and the dispatch of three
// subcommands, each a few lines; they share the flags' variables.
func Command() cli.Command {
	var (
		runDir, testDir         string
		update                  bool
		runTimeout, testTimeout time.Duration
	)
	return cli.Command{
		Name:    "scenario",
		Summary: "list, run or test scripted scenarios, built-in or your own (no API key needed)",
		Description: `Each scenario drives the real agent with a scripted model and a scripted
editor, in a temporary directory, and prints what the editor saw.`,
		Examples: []string{"acp-agent scenario list", "acp-agent scenario run subagent-fork", "acp-agent scenario test --dir testdata/review-session"},
		Sub: []cli.Command{{
			Name:     "list",
			Usage:    "scenario list",
			Summary:  "list the scenarios, each with its summary",
			Examples: []string{"acp-agent scenario list"},
			Run: func(ctx context.Context, env *cli.Env, args []string) error {
				if len(args) > 0 {
					return &cli.UsageError{Err: fmt.Errorf("scenario list: unexpected argument %q", args[0])}
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
			Usage:   "scenario run NAME\nscenario run --dir DIR",
			Summary: "run one scenario (built-in, or your own directory) and print its transcript",
			Description: `Runs the scenario in a fresh temporary data directory and cwd (removed
afterwards) and prints, as plain text: the scenario's description; the
editor's steps, numbered, each with what it got back (session ids, stop
reasons, listings); then each session's transcript turn by turn (user
messages, tool calls and their results, the agent's replies, how each turn
ended). The JSON-RPC messages themselves are not printed: the recorded
ones are in snapshots/NAME/wire.golden of the source tree.

--dir DIR runs DIR/scenario.yaml instead of a built-in scenario: one you
wrote, or one acp-agent exec --record wrote (see scenarios/README.md).`,
			Examples: []string{"acp-agent scenario run subagent-fork", "acp-agent scenario run --dir testdata/review-session"},
			Flags: func(fs *flag.FlagSet) {
				fs.StringVar(&runDir, "dir", "", "run the scenario in `DIR` (DIR/scenario.yaml) instead of a built-in one")
				fs.DurationVar(&runTimeout, "timeout", DefaultTimeout, "fail when the run has not ended after `DURATION`, naming the step it waited for")
			},
			Run: func(ctx context.Context, env *cli.Env, args []string) (err error) {
				ctx, stop := withTimeout(ctx, runTimeout)
				defer func() { err = timedOut(ctx, runTimeout, err); stop() }()
				if runDir != "" {
					if len(args) > 0 {
						return &cli.UsageError{Err: fmt.Errorf("scenario run --dir: unexpected argument %q", args[0])}
					}
					sc, err := LoadDir(runDir)
					if err != nil {
						return &cli.UsageError{Err: err}
					}
					rec, err := RunScenario(ctx, sc, nil)
					if err != nil {
						return err
					}
					_, err = env.Stdout.Write(rec.Transcript)
					return err
				}
				if len(args) != 1 {
					return &cli.UsageError{Err: fmt.Errorf("scenario run: want one scenario NAME or --dir DIR, got %d arguments (known: %s)", len(args), strings.Join(Names(), ", "))}
				}
				if _, err := Load(args[0]); err != nil {
					return &cli.UsageError{Err: err}
				}
				return Run(ctx, args[0], env.Stdout)
			},
		}, {
			Name:    "test",
			Usage:   "scenario test --dir DIR [--update]",
			Summary: "replay your scenario directory and compare it with its goldens (CI)",
			Description: `Runs DIR/scenario.yaml (a scenario acp-agent exec --record wrote, or one
you wrote) keyless, like "scenario run --dir", and compares what it
recorded (wire, session logs, model requests, transcript) with the goldens
in DIR/golden/. A difference, or a missing golden, exits 1 with a unified
diff per golden (golden first, then the replay). --update writes the
goldens instead: run it once after recording, review and commit DIR.`,
			Examples: []string{"acp-agent scenario test --dir testdata/review-session", "acp-agent scenario test --dir testdata/review-session --update"},
			Flags: func(fs *flag.FlagSet) {
				fs.StringVar(&testDir, "dir", "", "the scenario `DIR` (DIR/scenario.yaml, goldens in DIR/golden/)")
				fs.BoolVar(&update, "update", false, "write the goldens from this run instead of comparing")
				fs.DurationVar(&testTimeout, "timeout", DefaultTimeout, "fail when the replay has not ended after `DURATION`, naming the step it waited for")
			},
			Run: func(ctx context.Context, env *cli.Env, args []string) (err error) {
				ctx, stop := withTimeout(ctx, testTimeout)
				defer func() { err = timedOut(ctx, testTimeout, err); stop() }()
				if len(args) > 0 {
					return &cli.UsageError{Err: fmt.Errorf("scenario test: unexpected argument %q (give the directory with --dir)", args[0])}
				}
				if testDir == "" {
					return &cli.UsageError{Err: fmt.Errorf("scenario test: --dir DIR is required")}
				}
				if _, err := LoadDir(testDir); err != nil {
					return &cli.UsageError{Err: err}
				}
				return TestDir(ctx, testDir, update, env.Stdout, nil)
			},
		}},
	}
}

// summaryWidth bounds a summary in "scenario list", so each scenario is one
// line of a terminal next to its name.
const summaryWidth = 72

// summary is the scenario's one-line summary; without one, the first
// sentence of its description. Either is cut to summaryWidth.
// DefaultTimeout bounds a scenario run or test of the command line: a
// replay that never ends (a recording whose hang is never cancelled)
// fails instead of waiting for ever.
const DefaultTimeout = 5 * time.Minute

// errTimeout is the cause of a run's context when its --timeout passed.
var errTimeout = errors.New("the scenario's --timeout passed")

// withTimeout bounds ctx by d (none when d <= 0).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

// timedOut says that the run failed at its timeout, with the step it was
// waiting for (a *StepError names it), when it did.
func timedOut(ctx context.Context, d time.Duration, err error) error {
	if err == nil || !errors.Is(context.Cause(ctx), errTimeout) {
		return err
	}
	var se *StepError
	if errors.As(err, &se) {
		return fmt.Errorf("timed out after %s (--timeout) waiting for step %d (%s) at %s:%d: %w", d, se.Step.Index, se.Step.Op, se.File, se.Step.Line, err)
	}
	return fmt.Errorf("timed out after %s (--timeout): %w", d, err)
}

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
