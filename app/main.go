package app

// This file defines Main: the command line of the acp-agent binary (flags,
// environment, subcommand dispatch and exit codes).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/oklog/run"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/persistence"
)

// Environment variables read by the command line (flags take precedence).
const (
	EnvDataDir   = "ACP_AGENT_DATA_DIR"
	EnvModel     = "ACP_AGENT_MODEL"
	EnvBaseURL   = "ACP_AGENT_BASE_URL"
	EnvAPIKeyEnv = "ACP_AGENT_API_KEY_ENV"
	EnvLogLevel  = "ACP_AGENT_LOG_LEVEL"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Env is what a subcommand runs with: the standard streams, the
// environment, the logger and the values of the common flags.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Logger *slog.Logger
	// Flags holds the common flags as parsed so far (root flags, then the
	// subcommand's own copy of them).
	Flags *Flags
}

// Command is a subcommand of acp-agent.
type Command struct {
	Name    string
	Summary string // one line, shown in --help
	Usage   string // the synopsis after "acp-agent", e.g. "sessions [--cwd DIR]"
	Run     func(ctx context.Context, env *Env, args []string) error
}

// builtinCommands are the subcommands this package provides. Others (the
// scenario runner, the agents catalog) are passed to Main by cmd/acp-agent;
// adding one is one line in either place.
func builtinCommands() []Command {
	return []Command{
		sessionsCommand(),
		agentsCommand(),
	}
}

// UsageError marks a command-line mistake (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Flags are the flags shared by serving and every subcommand, each with an
// environment variable.
type Flags struct {
	DataDir   string
	Model     string
	BaseURL   string
	APIKeyEnv string
	LogLevel  string
}

// register binds the common flags to fs with the current values as
// defaults (so a subcommand inherits what the root parsed).
func (f *Flags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.DataDir, "data-dir", f.DataDir,
		"data directory holding sessions/ and projections/ (env "+EnvDataDir+"; default $XDG_STATE_HOME/acp-agent or ~/.local/state/acp-agent)")
	fs.Var(&modelsFlag{f: f}, "model",
		"model `SPEC`: script:PATH (scripted, no key), deepseek/MODEL, openai/MODEL or openai-compatible/MODEL; repeat it to offer several in the editor's model picker, the first being the default (env "+EnvModel+", comma-separated)")
	fs.StringVar(&f.BaseURL, "base-url", f.BaseURL,
		"API base URL of the provider; required for openai-compatible/ (env "+EnvBaseURL+")")
	fs.StringVar(&f.APIKeyEnv, "api-key-env", f.APIKeyEnv,
		"name of the environment variable holding the API key; default DEEPSEEK_API_KEY or OPENAI_API_KEY by provider (env "+EnvAPIKeyEnv+")")
	fs.StringVar(&f.LogLevel, "log-level", f.LogLevel,
		"log level on stderr: debug, info, warn or error (env "+EnvLogLevel+")")
}

func flagsFromEnv(getenv func(string) string) *Flags {
	f := &Flags{
		DataDir:   getenv(EnvDataDir),
		Model:     getenv(EnvModel),
		BaseURL:   getenv(EnvBaseURL),
		APIKeyEnv: getenv(EnvAPIKeyEnv),
		LogLevel:  getenv(EnvLogLevel),
	}
	if f.LogLevel == "" {
		f.LogLevel = "info"
	}
	return f
}

// dataDir returns the data directory, defaulting to persistence.DefaultDir.
func (f *Flags) dataDir() (string, error) {
	if f.DataDir != "" {
		return f.DataDir, nil
	}
	return persistence.DefaultDir()
}

func (f *Flags) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return 0, usageErrorf("invalid log level %q: want debug, info, warn or error", f.LogLevel)
	}
	return l, nil
}

// Version is the module version of the binary, or "dev".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// DeterministicEnv, set to "1", makes the served agent deterministic (see
// serve); it exists for recorded scenario runs, not for people.
const DeterministicEnv = "ACP_AGENT_DETERMINISTIC"

// Main runs the acp-agent command line with args (without the program
// name) and returns the exit code: 0 on success, on the client closing
// stdin and on SIGINT/SIGTERM; 2 for usage errors; 1 otherwise. extra adds
// subcommands. Main writes to stdout only the ACP protocol (when serving)
// or the output a subcommand was asked for; logs go to stderr.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, extra ...Command) int {
	cmds := map[string]Command{}
	for _, c := range append(builtinCommands(), extra...) {
		cmds[c.Name] = c
	}
	flags := flagsFromEnv(getenv)
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags.register(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeHelp(stdout, fs, cmds)
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "acp-agent: %v\nRun 'acp-agent --help' for usage.\n", err)
		return ExitUsage
	case *showVersion:
		fmt.Fprintf(stdout, "acp-agent %s\n", Version())
		return ExitOK
	}
	level, err := flags.level()
	if err != nil {
		return reportError(stderr, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv, Logger: logger, Flags: flags}

	if rest := fs.Args(); len(rest) > 0 {
		c, ok := cmds[rest[0]]
		if !ok {
			return reportError(stderr, usageErrorf("unknown command %q (run 'acp-agent --help')", rest[0]))
		}
		return reportError(stderr, c.Run(ctx, env, rest[1:]))
	}
	slog.SetDefault(logger)
	return reportError(stderr, serve(ctx, env))
}

// reportError prints err (if any) and maps it to an exit code.
func reportError(stderr io.Writer, err error) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, run.ErrSignal):
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "acp-agent: %v\n", err)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "acp-agent: %v\n", err)
		return ExitError
	}
}

// serve runs the ACP agent on stdin/stdout.
func serve(ctx context.Context, env *Env) error {
	dir, err := env.Flags.dataDir()
	if err != nil {
		return err
	}
	paceGC(env.Getenv)
	cfg := Config{
		DataDir:   dir,
		Model:     env.Flags.Model,
		BaseURL:   env.Flags.BaseURL,
		APIKeyEnv: env.Flags.APIKeyEnv,
		Version:   Version(),
		Logger:    env.Logger,
		Getenv:    env.Getenv,

		SettingsFile: settings.UserPath(env.Getenv),
	}
	if env.Getenv(DeterministicEnv) == "1" {
		// Recorded scenario runs: ids and timestamps from per-session
		// counters, and a fixed version, so a run through the binary
		// records the same bytes as the in-process runner.
		cfg.Sources = &session.DeterministicSources{Epoch: session.ScenarioEpoch, Step: 1000}
		cfg.Version = "scenario"
		// A recorded run never depends on (nor writes) the user's settings.
		cfg.SettingsFile = ""
	}
	a, err := New(cfg)
	if err != nil {
		return err
	}
	err = a.Run(ctx, env.Stdin, env.Stdout)
	return errors.Join(err, a.Close())
}

func writeHelp(w io.Writer, fs *flag.FlagSet, cmds map[string]Command) {
	var b strings.Builder
	b.WriteString(`acp-agent: an Agent Client Protocol (ACP) agent for editors, with durable
in-process subagents. Editors start it and speak ACP (JSON-RPC) on its
stdin/stdout; logs go to stderr.

Usage:
`)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	width := len("[flags]")
	for _, n := range names {
		width = max(width, len(cmds[n].Usage))
	}
	fmt.Fprintf(&b, "  acp-agent %-*s  %s\n", width, "[flags]", "serve ACP on stdin/stdout")
	for _, n := range names {
		c := cmds[n]
		fmt.Fprintf(&b, "  acp-agent %-*s  %s\n", width, c.Usage, c.Summary)
	}
	b.WriteString("\nFlags (also accepted after a command):\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s %s\n      %s\n", f.Name, name, usage)
	})
	b.WriteString(`
Environment:
  ` + EnvDataDir + `      default for --data-dir
  ` + EnvModel + `         default for --model (several comma-separated)
  ` + EnvBaseURL + `      default for --base-url
  ` + EnvAPIKeyEnv + `   default for --api-key-env
  ` + EnvLogLevel + `     default for --log-level
  DEEPSEEK_API_KEY, OPENAI_API_KEY
                           API keys of the deepseek/ and openai/ providers
  XDG_STATE_HOME           base of the default data directory
  ACP_AGENT_DETERMINISTIC  1: ids and timestamps from per-session counters (recorded scenario runs)

Without a model the agent still starts, creates and loads sessions, and
answers each prompt with an error explaining how to configure one.
`)
	io.WriteString(w, b.String())
}
