package scenarios

import (
	"context"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/app"
)

// Command is the "acp-agent scenario" subcommand: "list" prints the
// embedded scenarios, "run NAME" runs one against the real composition in
// a temporary directory and prints its transcript. It needs no model
// configuration and no API key.
func Command() app.Command {
	return app.Command{
		Name:    "scenario",
		Summary: "list or run the built-in scripted scenarios (no API key needed)",
		Usage:   "scenario list | run NAME",
		Run: func(ctx context.Context, env *app.Env, args []string) error {
			switch {
			case len(args) == 1 && args[0] == "list":
				for _, n := range Names() {
					sc, err := Load(n)
					if err != nil {
						return err
					}
					fmt.Fprintf(env.Stdout, "%-32s %s\n", n, firstSentence(sc.Description))
				}
				return nil
			case len(args) == 2 && args[0] == "run":
				if _, err := Load(args[1]); err != nil {
					return &app.UsageError{Err: err}
				}
				return Run(ctx, args[1], env.Stdout)
			}
			return &app.UsageError{Err: fmt.Errorf("usage: acp-agent scenario list | run NAME (scenarios: %s)", strings.Join(Names(), ", "))}
		},
	}
}

// firstSentence returns the description up to its first full stop, on one
// line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}
