package cli

// This file defines Main: the command line of the acp-agent binary (flags,
// environment, subcommand dispatch and exit codes).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/acp-agent/acp-agent/agent/model"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/run"

	"github.com/acp-agent/acp-agent/agent/model/recording/live"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/persistence"
)

// Environment variables read by the command line (flags take precedence).
const (
	EnvDataDir   = "ACP_AGENT_DATA_DIR"
	EnvModel     = "ACP_AGENT_MODEL"
	EnvBaseURL   = "ACP_AGENT_BASE_URL"
	EnvAPIKeyEnv = "ACP_AGENT_API_KEY_ENV"
	EnvLogLevel  = "ACP_AGENT_LOG_LEVEL"
	EnvSandbox   = "ACP_AGENT_SANDBOX"
	// EnvMaxBackground is --max-background.
	EnvMaxBackground = "ACP_AGENT_MAX_BACKGROUND"

	EnvContextWindow    = "ACP_AGENT_CONTEXT_WINDOW"
	EnvCompactThreshold = "ACP_AGENT_COMPACT_THRESHOLD"
	EnvIdleTimeout      = "ACP_AGENT_IDLE_TIMEOUT"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	// ExitRefused: exec's turn was cancelled, or refused something
	// (exec.go).
	ExitRefused = 3
	// ExitLimit: exec's turn (or its session tree) reached a limit:
	// --max-turns, --max-budget-usd, --timeout, or one of the settings'
	// (exec.go).
	ExitLimit = 4
)

// Env is what a command runs with: the standard streams, the
// environment, the logger and the values of the shared flags.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Logger *slog.Logger
	// Process is the signals, the exit and the terminal check (Run).
	Process Process
	// Flags holds the shared flags as parsed so far (before the command,
	// then the ones the command takes after its name).
	Flags *Flags
}

// builtinCommands are the commands this package provides. Others (the
// scenario runner) are passed to Main by cmd/acp-agent; adding one is one
// line in either place.
func builtinCommands() []Command {
	return []Command{
		sessionsCommand(),
		agentsCommand(),
		execCommand(),
		skillsCommand(),
	}
}

// Flags are the flags shared by serving and every subcommand, each with an
// environment variable.
type Flags struct {
	DataDir   string
	Model     string
	BaseURL   string
	APIKeyEnv string
	LogLevel  string
	// Sandbox runs local commands in the sandbox (writes only under the
	// cwd and the temp dir, no network).
	Sandbox bool
	// Context policy and model waits (issue 18): 0 selects the defaults.
	ContextWindow    int
	CompactThreshold float64
	IdleTimeout      time.Duration
	// MaxBackground limits the background subagents of one session
	// running at once (0: the settings file's, else the default; -1: the
	// environment variable was not a number).
	MaxBackground int
	// logLevelSet: --log-level or its variable was given. A command other
	// than serving then logs at that level; otherwise it logs errors only,
	// so no log line sits on top of the output it was asked for (what a
	// command does is in its output already).
	logLevelSet bool
}

// register binds every shared flag to fs with the current values as
// defaults.
func (f *Flags) register(fs *flag.FlagSet) {
	f.registerOnly(fs, CommonDataDir, CommonModel, CommonBaseURL, CommonAPIKeyEnv, CommonLogLevel, CommonSandbox, CommonContextWindow, CommonCompactThreshold, CommonIdleTimeout, CommonMaxBackground)
}

// registerOnly binds the named shared flags to fs.
func (f *Flags) registerOnly(fs *flag.FlagSet, names ...string) {
	for _, n := range names {
		switch n {
		case CommonDataDir:
			fs.StringVar(&f.DataDir, n, f.DataDir,
				"data directory `DIR`, holding sessions/ and projections/ (env "+EnvDataDir+"; default $XDG_STATE_HOME/acp-agent or ~/.local/state/acp-agent)")
		case CommonModel:
			fs.Var(&modelsFlag{f: f}, n,
				"model `SPEC`: anthropic/MODEL (ANTHROPIC_API_KEY), deepseek/MODEL (DEEPSEEK_API_KEY), openai/MODEL (OPENAI_API_KEY), openai-compatible/MODEL (with --base-url) or script:PATH (scripted, no key); repeat it to offer several in the editor's model picker, the first being the default (env "+EnvModel+", comma-separated)")
		case CommonBaseURL:
			fs.StringVar(&f.BaseURL, n, f.BaseURL,
				"API base `URL` of the provider; required for openai-compatible/ (env "+EnvBaseURL+")")
		case CommonAPIKeyEnv:
			fs.StringVar(&f.APIKeyEnv, n, f.APIKeyEnv,
				"`NAME` of the environment variable holding the API key; default ANTHROPIC_API_KEY, DEEPSEEK_API_KEY or OPENAI_API_KEY by provider (env "+EnvAPIKeyEnv+")")
		case CommonLogLevel:
			fs.StringVar(&f.LogLevel, n, f.LogLevel,
				"log `LEVEL` on stderr: debug, info, warn or error (env "+EnvLogLevel+")")
		case CommonSandbox:
			fs.BoolVar(&f.Sandbox, n, f.Sandbox,
				"run commands on this machine in a sandbox: they read everywhere, write only under the session's directory and the temp dir, and have no network (env "+EnvSandbox+": 1/0, true/false, yes/no or on/off)")
		case CommonContextWindow:
			fs.IntVar(&f.ContextWindow, n, f.ContextWindow,
				"context window of the model in `tokens`; default: the built-in table of known models (usage and automatic compaction need a known window) (env "+EnvContextWindow+")")
		case CommonCompactThreshold:
			fs.Float64Var(&f.CompactThreshold, n, f.CompactThreshold,
				"compact a session when its next request would fill this `fraction` of the context window (default 0.8) (env "+EnvCompactThreshold+")")
		case CommonIdleTimeout:
			fs.DurationVar(&f.IdleTimeout, n, f.IdleTimeout,
				"end and retry a model request after this long without a byte from the provider (default 2m; negative disables) (env "+EnvIdleTimeout+", for example 90s)")
		case CommonMaxBackground:
			fs.IntVar(&f.MaxBackground, n, f.MaxBackground,
				"run at most `N` background subagents of one session at once; more wait in a queue (env "+EnvMaxBackground+"; default: subagents.maxBackground of the settings file, else 4)")
		default:
			panic("app: unknown shared flag " + n) // a programming error in a Command literal
		}
	}
}

// flagsFromEnv reads the shared flags' environment variables. A value that
// does not parse is a usage error naming the variable.
func flagsFromEnv(getenv func(string) string) (*Flags, error) {
	f := &Flags{
		DataDir:   getenv(EnvDataDir),
		Model:     getenv(EnvModel),
		BaseURL:   getenv(EnvBaseURL),
		APIKeyEnv: getenv(EnvAPIKeyEnv),
		LogLevel:  getenv(EnvLogLevel),
	}
	f.logLevelSet = f.LogLevel != ""
	if f.LogLevel == "" {
		f.LogLevel = "info"
	}
	if v := getenv(EnvMaxBackground); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			f.MaxBackground = n
		} else {
			f.MaxBackground = -1
		}
	}
	var errs []error
	if v := getenv(EnvSandbox); v != "" {
		b, err := parseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvSandbox, v, err))
		}
		f.Sandbox = b
	}
	if v := strings.TrimSpace(getenv(EnvContextWindow)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a number of tokens", EnvContextWindow, v))
		}
		f.ContextWindow = n
	}
	if v := strings.TrimSpace(getenv(EnvCompactThreshold)); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a fraction such as 0.8", EnvCompactThreshold, v))
		}
		f.CompactThreshold = x
	}
	if v := strings.TrimSpace(getenv(EnvIdleTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration such as 90s or 2m", EnvIdleTimeout, v))
		}
		f.IdleTimeout = d
	}
	if err := errors.Join(errs...); err != nil {
		return f, &UsageError{Err: err}
	}
	return f, nil
}

// parseBool reads a boolean environment variable in the usual spellings,
// case-insensitive; anything else is refused rather than read as false
// (ACP_AGENT_SANDBOX=true once meant no sandbox).
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("want 1/0, true/false, yes/no or on/off")
}

// validate checks the shared flags the way serving would, so a mistake
// before a command ("acp-agent --model nosuch/x sessions") is a usage error
// there too, not ignored.
func (f *Flags) validate() error {
	if _, err := f.level(); err != nil {
		return err
	}
	if f.ContextWindow < 0 || f.CompactThreshold < 0 || f.CompactThreshold > 1 {
		return usageErrorf("--context-window must be positive and --compact-threshold between 0 and 1 (got %d and %g)", f.ContextWindow, f.CompactThreshold)
	}
	for spec := range strings.SplitSeq(f.Model, ",") {
		if err := app.CheckModelSpec(strings.TrimSpace(spec)); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// dataDir returns the data directory, defaulting to persistence.DefaultDir.
func (f *Flags) dataDir() (string, error) {
	if f.DataDir != "" {
		return f.DataDir, nil
	}
	dir, err := persistence.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("%w, or name the data directory with %s or --data-dir", err, EnvDataDir)
	}
	return dir, nil
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

// versionLine is what --version prints: the module version, the commit
// (when the build recorded it) and the Go version.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "acp-agent " + Version()
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" || version == "(devel)" {
		version = "dev"
	}
	commit, modified := "", false
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			commit = st.Value
		case "vcs.modified":
			modified = st.Value == "true"
		}
	}
	switch {
	case commit == "":
		commit = "commit unknown: built without VCS information"
	case modified:
		commit = "commit " + commit + " with local changes"
	default:
		commit = "commit " + commit
	}
	return fmt.Sprintf("acp-agent %s (%s; %s)", version, commit, bi.GoVersion)
}

// DeterministicEnv, set to "1", makes the served agent deterministic (see
// serve); it exists for recorded scenario runs, not for people.
const DeterministicEnv = "ACP_AGENT_DETERMINISTIC"

// Main runs the acp-agent command line with args (without the program
// name) and returns the exit code: ExitOK on success, on the client closing
// stdin and on SIGINT/SIGTERM; ExitUsage for usage errors (bad flags,
// arguments or configuration); ExitError otherwise. extra adds commands.
// Main writes to stdout only the ACP protocol (when serving) or the output
// a command was asked for (help included); logs and errors go to stderr.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, extra ...Command) int {
	return Run(ctx, Process{}, args, stdin, stdout, stderr, getenv, extra...)
}

// Run is Main with the process's signals, exit and terminal check taken
// from p (tests drive exec's interrupts and progress through it).
func Run(ctx context.Context, p Process, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, extra ...Command) int {
	var root node
	root.cmd.Sub = append(builtinCommands(), extra...)
	root.cmd.Sub = append(root.cmd.Sub, helpCommand(func() node { return root }))
	slices.SortFunc(root.cmd.Sub, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })

	flags, envErr := flagsFromEnv(getenv)
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv, Process: p, Flags: flags}
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flags.register(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	record := registerRecord(fs, getenv(EnvRecord))
	err := checkKnownFlags(fs, args, false)
	if err == nil {
		err = fs.Parse(args)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return reportError(stderr, writeRootHelp(stdout, env, root))
	case err != nil:
		return reportError(stderr, &UsageError{Err: doubleDash(err)})
	case *showVersion:
		fmt.Fprintln(stdout, versionLine())
		return ExitOK
	case envErr != nil:
		return reportError(stderr, envErr)
	}
	recordSet := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case CommonLogLevel:
			flags.logLevelSet = true
		case recordFlag:
			recordSet = true
		}
	})
	level, err := flags.level()
	if err != nil {
		return reportError(stderr, err)
	}
	if rest := fs.Args(); len(rest) > 0 {
		c, ok := root.child(rest[0])
		if !ok {
			return reportError(stderr, usageErrorf("unknown command %q%s", rest[0], suggest(rest[0], root.cmd.Sub)))
		}
		if recordSet {
			return reportError(stderr, usageErrorf("--record before a command: it records a served connection (acp-agent --record DIR); exec takes its own after its name (acp-agent exec --record DIR)"))
		}
		if err := flags.validate(); err != nil {
			return reportError(stderr, err)
		}
		if !flags.logLevelSet {
			level = max(level, slog.LevelError)
		}
		env.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
		return reportError(stderr, c.run(ctx, env, rest[1:]))
	}
	env.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(env.Logger)
	return reportError(stderr, serve(ctx, env, *record))
}

// EnvRecord is serving's --record variable.
const EnvRecord = "ACP_AGENT_RECORD"

// recordFlag is serving's --record.
const recordFlag = "record"

func registerRecord(fs *flag.FlagSet, def string) *string {
	return fs.String(recordFlag, def, "record the editor's first session (with its subagents) as a keyless scenario in `DIR`, written when the agent stops: the client's steps, every model reply, the files it read; secrets redacted; for acp-agent scenario test --dir (env "+EnvRecord+")")
}

// reportError prints err (if any) for people and maps it to an exit code.
func reportError(stderr io.Writer, err error) int {
	var ue *UsageError
	var ex *ExitCodeError
	switch {
	case err == nil, errors.Is(err, run.ErrSignal):
		return ExitOK
	case errors.As(err, &ex):
		if ex.Err != nil {
			fmt.Fprintf(stderr, "acp-agent: %v\n", ex.Err)
		}
		return ex.Code
	case errors.As(err, &ue):
		cmd := ue.Cmd
		if ue.root {
			cmd = ""
		}
		fmt.Fprintf(stderr, "acp-agent: %v\nRun 'acp-agent help%s' for usage.\n", err, prefixed(" ", cmd))
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "acp-agent: %v\n", err)
		return ExitError
	}
}

func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// serve runs the ACP agent on stdin/stdout; with record, it records the
// connection's first session into that directory (record_serve.go).
func serve(ctx context.Context, env *Env, record string) error {
	paceGC(env.Getenv)
	cfg, err := serveConfig(env)
	if err != nil {
		return err
	}
	var rec *live.Serve
	if record != "" {
		if rec, err = live.NewServe(record); err != nil {
			return &UsageError{Err: err}
		}
		cfg.WrapModel = rec.WrapModel(live.SecretValues(cfg.APIKeyEnv, env.Getenv, os.Environ()), cfg.WrapModel)
		cfg.WrapWorkspace = rec.WrapWorkspace(cfg.WrapWorkspace)
		cfg.EstimateTokens = rec.EstimateTokens()
	}
	a, err := app.New(cfg)
	if err != nil {
		return asUsage(err)
	}
	in, out := env.Stdin, env.Stdout
	if rec != nil {
		rec.Attach(a.Sessions)
		stop := rec.Observe(a.Sessions)
		in, out = rec.TapIn(in), rec.TapOut(out)
		err = a.Run(ctx, in, out)
		stop()
		werr := rec.Write(env.Stderr, a.Config.ContextWindow)
		cerr := a.Close()
		if werr != nil {
			// A recording that could not be written fails the run, even
			// one a signal ended (which alone exits 0).
			return errors.Join(werr, cerr)
		}
		return errors.Join(err, cerr)
	}
	err = a.Run(ctx, in, out)
	return errors.Join(err, a.Close())
}

// serveConfig is the composition's Config from the shared flags, the
// settings and the environment: the same for serving and for exec.
func serveConfig(env *Env) (app.Config, error) {
	// The providers' keys leave the environment before anything reads
	// them: a command the agent runs outside the sandbox could read them
	// in /proc/PID/environ. The agent reads them through env.Getenv.
	getenv, err := env.Process.hideKeys(append([]string{env.Flags.APIKeyEnv}, app.ProviderKeyVars...), env.Getenv)
	env.Getenv = getenv
	if err != nil && env.Logger != nil {
		env.Logger.Warn("the API key stays readable by this user's processes", "err", err)
	}
	dir, err := env.Flags.dataDir()
	if err != nil {
		return app.Config{}, err
	}
	if f := env.Flags; f.ContextWindow < 0 || f.CompactThreshold < 0 || f.CompactThreshold > 1 {
		return app.Config{}, usageErrorf("--context-window must be positive and --compact-threshold between 0 and 1 (got %d and %g)", f.ContextWindow, f.CompactThreshold)
	}
	if env.Flags.MaxBackground < 0 {
		return app.Config{}, usageErrorf("--max-background (env %s) must be a positive number of subagents", EnvMaxBackground)
	}
	for spec := range strings.SplitSeq(env.Flags.Model, ",") {
		if err := app.CheckModelSpec(strings.TrimSpace(spec)); err != nil {
			return app.Config{}, &UsageError{Err: err}
		}
	}
	cfg := app.Config{
		DataDir:   dir,
		Model:     env.Flags.Model,
		BaseURL:   env.Flags.BaseURL,
		APIKeyEnv: env.Flags.APIKeyEnv,
		Version:   Version(),

		ContextWindow:    env.Flags.ContextWindow,
		CompactThreshold: env.Flags.CompactThreshold,
		IdleTimeout:      env.Flags.IdleTimeout,
		MaxBackground:    env.Flags.MaxBackground,
		Logger:           env.Logger,
		Getenv:           env.Getenv,

		SettingsFile: settings.UserPath(env.Getenv),
	}
	cfg.Sandbox = app.SandboxPolicy(env.Flags.Sandbox, settings.Load(cfg.SettingsFile, "").Sandbox())
	if env.Getenv(DeterministicEnv) == "1" {
		// Recorded scenario runs: ids and timestamps from per-session
		// counters, and a fixed version, so a run through the binary
		// records the same bytes as the in-process runner.
		cfg.Sources = &session.DeterministicSources{Epoch: session.ScenarioEpoch, Step: 1000}
		cfg.Version = "scenario"
		cfg.Prompt = app.DeterministicPrompt()
		cfg.DigestSync = true
		// A recorded run never depends on (nor writes) the user's settings.
		cfg.SettingsFile = ""
	}
	return cfg, nil
}

// writeRootHelp prints acp-agent's own help: what it is, serving and
// the commands, the serving flags, the environment and the exit status.
func writeRootHelp(w io.Writer, env *Env, root node) error {
	var b strings.Builder
	b.WriteString(`acp-agent: an Agent Client Protocol (ACP) agent for editors, with durable
in-process subagents. Editors start it and speak ACP (JSON-RPC) on its
stdin/stdout; logs go to stderr.

Usage:
  acp-agent [flags]                    serve ACP on stdin/stdout
  acp-agent COMMAND [flags] [ARGS...]  run a command

Commands:
`)
	width := 0
	for _, c := range root.cmd.Sub {
		width = max(width, len(c.Name))
	}
	for _, c := range root.cmd.Sub {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fs := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	(&Flags{}).register(fs)
	fs.Bool("version", false, "print the version and exit")
	registerRecord(fs, "")
	writeFlags(&b, fs)
	b.WriteString("\nThese flags go before a command too (acp-agent --data-dir DIR sessions).\n\nEnvironment (a flag wins over its variable):\n")
	for _, e := range [][2]string{
		{EnvDataDir, "default for --data-dir"},
		{EnvModel, "default for --model (several comma-separated)"},
		{EnvBaseURL, "default for --base-url"},
		{EnvAPIKeyEnv, "default for --api-key-env"},
		{EnvLogLevel, "default for --log-level"},
		{EnvSandbox, "default for --sandbox (1/0, true/false, yes/no, on/off)"},
		{EnvContextWindow, "default for --context-window"},
		{EnvCompactThreshold, "default for --compact-threshold"},
		{EnvIdleTimeout, "default for --idle-timeout"},
		{EnvRecord, "default for --record (serving only)"},
		{"ANTHROPIC_API_KEY", "API key of the anthropic/ provider"},
		{"DEEPSEEK_API_KEY", "API key of the deepseek/ provider"},
		{"OPENAI_API_KEY", "API key of the openai/ provider"},
		{app.EnvThinkingBudget, "tokens of extended thinking for anthropic/ models"},
		{"XDG_STATE_HOME", "base of the default data directory"},
		{"XDG_CONFIG_HOME", "base of the user settings file (default ~/.config)"},
		{"GOGC", "garbage collector pace of the serving process (default 40)"},
		{DeterministicEnv, "1: ids and timestamps from per-session counters (recorded scenario runs)"},
	} {
		fmt.Fprintf(&b, "  %-28s %s\n", e[0], e[1])
	}
	settingsFile := settings.UserPath(env.Getenv)
	if settingsFile == "" {
		settingsFile = "$XDG_CONFIG_HOME/acp-agent/settings.json"
	}
	fmt.Fprintf(&b, `
Settings: %s (permission rules, sandbox, context windows),
and .acp-agent/settings.json in a project; see docs/configuration.md.

Without a model the agent still starts, creates and loads sessions, and
answers each prompt with an error explaining how to configure one. With an
anthropic/, deepseek/, openai/ or openai-compatible/ model whose API key is
not set it starts too: initialize names the variable (an env_var auth
method) and prompts answer "Authentication required" until it is set.

Examples:
  acp-agent scenario run subagent-list-agents
  acp-agent --model anthropic/claude-sonnet-4-5
  acp-agent --model deepseek/deepseek-chat
  acp-agent --model script:demo.yaml --data-dir /tmp/acp-demo
  acp-agent sessions --cwd "$PWD"

`, settingsFile)
	b.WriteString(exitStatusHelp + `
Run 'acp-agent help COMMAND' for a command's flags and examples.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// asUsage marks configuration mistakes (model.ErrBadConfig: a bad
// --model or --base-url) as usage errors, exit status 2.
func asUsage(err error) error {
	if errors.Is(err, model.ErrBadConfig) {
		return &UsageError{Err: err}
	}
	return err
}
