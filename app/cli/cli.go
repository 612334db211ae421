package cli

// This file defines the command tree of the acp-agent binary: commands
// with a synopsis, a description, examples and only their own flags,
// subcommands, "help [COMMAND]", --help at every level, and the mapping of
// errors to exit codes (0 ok, 1 failure, 2 usage).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
)

// Command is a command of acp-agent (or a subcommand of one).
type Command struct {
	Name string
	// Summary is one line, shown in the parent's command list.
	Summary string
	// Usage is the synopsis after "acp-agent", one line per form (the
	// subcommands' forms are added to the help).
	Usage string
	// Description, when set, follows the summary in the command's help.
	Description string
	// Examples are command lines shown in the help.
	Examples []string
	// Common names the shared flags the command takes after its name
	// (CommonDataDir, ...); their values land in Env.Flags.
	Common []string
	// Flags, when set, declares the command's own flags on fs. The values
	// are read by Run (bind them to variables Run closes over).
	Flags func(fs *flag.FlagSet)
	// Sub are the subcommands ("sessions show", "scenario run").
	Sub []Command
	// Run runs the command with its positional arguments (flags parsed,
	// also when they follow the arguments). Nil means the command only
	// groups its subcommands.
	Run func(ctx context.Context, env *Env, args []string) error
}

// Names of the shared flags a Command may list in Common.
const (
	CommonDataDir   = "data-dir"
	CommonModel     = "model"
	CommonBaseURL   = "base-url"
	CommonAPIKeyEnv = "api-key-env"
	CommonLogLevel  = "log-level"
	CommonSandbox   = "sandbox"

	CommonContextWindow    = "context-window"
	CommonCompactThreshold = "compact-threshold"
	CommonIdleTimeout      = "idle-timeout"
	CommonMaxBackground    = "max-background"
)

// UsageError marks a command-line mistake (exit code 2). Cmd is the
// command path it concerns ("sessions show"), set by the command tree, so
// the hint names the right help.
type UsageError struct {
	Err error
	Cmd string
	// root: the hint names acp-agent's own help whatever Cmd is.
	root bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// helpRequest is returned by parsing when -h or --help was given.
type helpRequest struct{}

func (helpRequest) Error() string { return "help requested" }

// node is a command with its path in the tree.
type node struct {
	path []string // e.g. ["sessions", "show"]
	cmd  Command
}

func (n node) name() string { return strings.Join(n.path, " ") }

func (n node) child(name string) (node, bool) {
	for _, c := range n.cmd.Sub {
		if c.Name == name {
			return node{path: append(slices.Clone(n.path), name), cmd: c}, true
		}
	}
	return node{}, false
}

// flagSet builds the command's flags: its shared flags (bound to
// env.Flags) and its own.
func (n node) flagSet(env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet("acp-agent "+n.name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if len(n.cmd.Common) > 0 {
		env.Flags.registerOnly(fs, n.cmd.Common...)
	}
	if n.cmd.Flags != nil {
		n.cmd.Flags(fs)
	}
	return fs
}

// run dispatches args to n or one of its subcommands.
func (n node) run(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		if c, ok := n.child(args[0]); ok {
			return c.run(ctx, env, args[1:])
		}
	}
	fs := n.flagSet(env)
	pos, err := parseInterspersed(fs, args)
	switch {
	case errors.As(err, new(helpRequest)):
		return n.writeHelp(env.Stdout, fs)
	case err != nil:
		return &UsageError{Err: fmt.Errorf("%s: %w", n.name(), doubleDash(err)), Cmd: n.name()}
	case n.cmd.Run == nil && len(pos) == 0:
		return &UsageError{Err: fmt.Errorf("%s: missing command: want %s", n.name(), n.subNames()), Cmd: n.name()}
	case n.cmd.Run == nil:
		return &UsageError{Err: fmt.Errorf("%s: unknown command %q%s: want %s", n.name(), pos[0], suggest(pos[0], n.cmd.Sub), n.subNames()), Cmd: n.name()}
	}
	if err := relevel(fs, env); err != nil {
		return err
	}
	err = n.cmd.Run(ctx, env, pos)
	var ue *UsageError
	if errors.As(err, &ue) && ue.Cmd == "" {
		ue.Cmd = n.name()
	}
	return err
}

// relevel honours a --log-level given after the command's name: the
// logger was made from the flags before it.
func relevel(fs *flag.FlagSet, env *Env) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == CommonLogLevel })
	if !set {
		return nil
	}
	level, err := env.Flags.level()
	if err != nil {
		return err
	}
	env.Flags.logLevelSet = true
	env.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	return nil
}

func (n node) subNames() string {
	names := make([]string, len(n.cmd.Sub))
	for i, c := range n.cmd.Sub {
		names[i] = c.Name
	}
	return strings.Join(names, " or ")
}

// parseInterspersed parses fs from args, letting flags follow positional
// arguments ("agents ID --descendants"); after "--" everything is
// positional. -h and --help return helpRequest.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := checkKnownFlags(fs, args, true); err != nil {
		return nil, err
	}
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, helpRequest{}
		}
		if err != nil {
			return nil, doubleDash(err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkKnownFlags reports the first flag in args that fs does not define,
// naming the ones it does (the flag package's own message is single-dash
// and says nothing of what would work). Without interspersed it stops at
// the first positional argument (the command name, for the root).
func checkKnownFlags(fs *flag.FlagSet, args []string, interspersed bool) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			if !interspersed {
				return nil
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "h" || name == "help" || name == "" {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			var known []string
			fs.VisitAll(func(f *flag.Flag) { known = append(known, "--"+f.Name) })
			if len(known) == 0 {
				return fmt.Errorf("unknown flag --%s (this command takes no flags)", name)
			}
			return fmt.Errorf("unknown flag --%s (known: %s)", name, strings.Join(known, ", "))
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) {
			i++ // its value
		}
	}
	return nil
}

// flagPackageDash finds the flag package's single-dash spelling of a flag
// in its messages ("flag needs an argument: -cwd").
var flagPackageDash = regexp.MustCompile(`(^|[\s:])-([A-Za-z][A-Za-z0-9-]*)`)

// doubleDash rewrites the flag package's messages with the double-dash
// spelling every help and message of acp-agent uses.
func doubleDash(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(flagPackageDash.ReplaceAllString(err.Error(), "${1}--${2}"))
}

// suggest returns ` (did you mean "NAME"?)` for the command of cmds
// nearest to name, or "" when none is near (edit distance at most 2, or a
// third of the name).
func suggest(name string, cmds []Command) string {
	best, bestD := "", 0
	for _, c := range cmds {
		d := editDistance(strings.ToLower(name), c.Name)
		if best == "" || d < bestD {
			best, bestD = c.Name, d
		}
	}
	if best == "" || bestD > max(2, len(name)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// writeHelp prints the help of n: usage forms, summary and description,
// subcommands, flags, examples and exit status.
func (n node) writeHelp(w io.Writer, fs *flag.FlagSet) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, u := range n.usages() {
		fmt.Fprintf(&b, "  acp-agent %s\n", u)
	}
	fmt.Fprintf(&b, "\n%s\n", sentence(n.cmd.Summary))
	if n.cmd.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(n.cmd.Description, "\n"))
	}
	if len(n.cmd.Sub) > 0 {
		b.WriteString("\nCommands:\n")
		width := 0
		for _, c := range n.cmd.Sub {
			width = max(width, len(c.Name))
		}
		for _, c := range n.cmd.Sub {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, c.Name, c.Summary)
		}
	}
	writeFlags(&b, fs)
	if len(n.cmd.Examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, e := range n.cmd.Examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	b.WriteString("\n" + exitStatusHelp)
	if len(n.cmd.Sub) > 0 {
		fmt.Fprintf(&b, "\nRun 'acp-agent help %s COMMAND' for a command's flags and examples.\n", n.name())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// usages lists the command's synopsis lines, then its subcommands'.
func (n node) usages() []string {
	var out []string
	if n.cmd.Usage != "" {
		out = append(out, strings.Split(n.cmd.Usage, "\n")...)
	}
	for _, c := range n.cmd.Sub {
		sub, _ := n.child(c.Name)
		out = append(out, sub.usages()...)
	}
	return out
}

// writeFlags lists fs's flags, double-dashed, each with its description.
func writeFlags(b *strings.Builder, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		fmt.Fprintf(b, "  --%s%s\n      %s\n", f.Name, name, usage)
	})
}

// exitStatusHelp ends every help text.
const exitStatusHelp = "Exit status: 0 on success, 1 when the command failed, 2 for a usage error (bad flag, argument or configuration).\n"

func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// helpCommand is "help [COMMAND [SUBCOMMAND]]" over the tree root.
func helpCommand(root func() node) Command {
	return Command{
		Name:     "help",
		Summary:  "show the help of acp-agent or of one of its commands",
		Usage:    "help [COMMAND [SUBCOMMAND]]",
		Examples: []string{"acp-agent help", "acp-agent help sessions show"},
		Run: func(ctx context.Context, env *Env, args []string) error {
			n := root()
			for _, a := range args {
				c, ok := n.child(a)
				if !ok {
					what := "command"
					if len(n.path) > 0 {
						what = n.name() + " command"
					}
					return &UsageError{Err: fmt.Errorf("help: unknown %s %q%s", what, a, suggest(a, n.cmd.Sub)), root: true}
				}
				n = c
			}
			if len(n.path) == 0 {
				return writeRootHelp(env.Stdout, env, n)
			}
			return n.writeHelp(env.Stdout, n.flagSet(&Env{Flags: &Flags{}}))
		},
	}
}
