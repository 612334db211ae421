package app

// This file defines App, the composition of one agent process, and its
// lifecycle: New wires, Serve speaks ACP and shuts down, Run adds signal
// handling and the background flusher, Close releases storage.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/run"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/prompt"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/mcp"
	"github.com/acp-agent/acp-agent/agent/tool/todo"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// DefaultShutdownTimeout bounds the graceful part of a shutdown (cancelled
// turns ending, children draining, final updates and flushes).
const DefaultShutdownTimeout = 10 * time.Second

// Config configures one agent process. DataDir is required; everything
// else has a usable zero value.
type Config struct {
	// DataDir holds sessions/ and projections/ (see README).
	DataDir string
	// Model is the --model value: "" (none), "script:PATH", or
	// PROVIDER/MODEL for the provider hook; several, comma-separated, offer
	// the model picker (models.go), the first being the default.
	Model     string
	BaseURL   string
	APIKeyEnv string
	// ModelChoices, when set, are the models used as is (embedders, tests
	// and scenarios offer the model picker with two): the first is the
	// default.
	ModelChoices []ModelChoice
	// Provider resolves PROVIDER/MODEL specs; nil uses providerModel.
	Provider ProviderFunc
	// Tools are offered to every top-level agent (tests add their own).
	Tools []tool.Tool
	// System fixes the system prompt of top-level agents (children add
	// their delegation section); "" assembles it per session (prompt.go).
	System string
	// Prompt configures the assembled system prompt.
	Prompt   PromptConfig
	MaxSteps int
	// Sources supplies ids and clocks; nil means wall clock and random ids
	// (the scenario runner passes session.DeterministicSources).
	Sources session.Sources
	Version string
	Logger  *slog.Logger
	// Getenv reads the environment (API keys); nil means os.Getenv.
	Getenv func(string) string
	// ShutdownTimeout bounds a graceful shutdown; 0 means the default.
	ShutdownTimeout time.Duration
	// MaxDepth bounds delegation depth; 0 means DefaultMaxDepth.
	MaxDepth int
	// MaxBackground limits the background subagents of one root session
	// running at once (--max-background); 0 means the settings file's
	// subagents.maxBackground, else subagent.DefaultMaxBackground.
	MaxBackground int
	// TreeMaxTokens and TreeMaxCostUSD bound every root session's tree
	// (exec --max-budget-usd; 0: the settings file's subagents.maxTokens
	// and subagents.maxCostUsd, else none). TurnTimeout bounds each turn
	// of a top-level session (exec --timeout; 0: none).
	TreeMaxTokens  int
	TreeMaxCostUSD float64
	TurnTimeout    time.Duration
	// Wire, when set, runs after the core is built and before the ACP
	// server is created: it may add tools, extensions and drainers.
	Wire func(a *App) error
	// SettingsFile is the user-level settings file (permission rules,
	// command environment, sandbox); "" means none (tests). Project files
	// (<cwd>/.acp-agent/settings.json) apply either way.
	SettingsFile string
	// MCPStartTimeout bounds the start of each MCP server a client names
	// in session/new or session/load; 0 means mcp.DefaultStartTimeout.
	MCPStartTimeout time.Duration
	// Sandbox, when set, runs local commands in the Landlock sandbox
	// (workspace.go); nil runs them as the user, unless the project's
	// settings file turns the sandbox on for its sessions.
	Sandbox *sandbox.Policy
	// ContextWindow overrides the context window of every model
	// (--context-window); 0 uses the built-in table of known models.
	ContextWindow int
	// CompactThreshold is the fraction of the window at which sessions
	// compact (--compact-threshold); 0 means budget.DefaultThreshold.
	CompactThreshold float64
	// IdleTimeout ends a model attempt after this long without a byte
	// (--idle-timeout); 0 means the provider's default, negative disables.
	IdleTimeout time.Duration
	// WrapModel, when set, wraps the resolved model (exec --record tees
	// every reply into a scenario through it: agent/model/recording).
	WrapModel func(model.Model) model.Model
	// WrapWorkspace, when set, wraps the resolver the workspace tools use
	// (exec --record snapshots the files the gate let a tool read or
	// change through it).
	WrapWorkspace func(workspace.Resolver) workspace.Resolver
	// EstimateTokens, when set, is agent.Options.EstimateTokens for every
	// in-process agent: exec --record notes the estimates the automatic
	// compaction decisions used, a replay gives them back.
	EstimateTokens func(c model.Caller, estimate int) int
	// DigestSync sends each change of a child's live digest at once instead
	// of throttled (recorded runs: the wire then depends only on the
	// children's events; subagent.DigestOptions.Sync).
	DigestSync bool
	// Testing holds the knobs only this module's tests and scenario runner
	// turn (a scripted model instance, no fsync, fault injection). Its type
	// is internal, so programs outside the module leave it nil.
	Testing *testhooks.Hooks
}

// hooks returns the test-only knobs; the zero value when none are set.
func (c Config) hooks() testhooks.Hooks {
	if c.Testing == nil {
		return testhooks.Hooks{}
	}
	return *c.Testing
}

// App is one agent process's composition: session store, persistence,
// agent registry, model, tools and the ACP server. Fields are set by New
// and must not be reassigned afterwards; Tools, Extensions and Drainers may
// be extended only from wiring hooks (before the server is created).
type App struct {
	Config   Config
	Log      *slog.Logger
	Sessions *session.Store
	Persist  *persistence.Store
	Agents   *agent.Registry
	// Model is nil when no model is configured; ModelErr then explains
	// how to configure one, and prompts are refused with it.
	Model    model.Model
	ModelErr error
	// Models are the configured models, the default first; with two or
	// more, Model dispatches by route and clients get the model picker.
	Models []ModelChoice
	Tools  *tool.Registry
	// Projections folds every live session incrementally (subagent
	// identity, timing, title); Cache checkpoints them for cold sessions;
	// Catalog lists subagents live or from disk (see catalog.go).
	Projections *projection.Registry
	Cache       *projcache.Cache
	Catalog     *subagent.Catalog
	// Subagents is the subagent runtime (see subagents.go).
	Subagents *subagent.Runtime
	// WorkspaceTools are offered to top-level agents (they are in Tools)
	// and to children (see workspace.go).
	WorkspaceTools []tool.Tool
	// Extensions are the ACP extension methods ("_acp-agent/...").
	Extensions map[string]acp.ExtensionFunc
	// Drainers run during shutdown, in order, after in-flight prompts were
	// cancelled and before top-level agents are closed. The subagent
	// runtime registers its drain here (see wireSubagents).
	Drainers []func(ctx context.Context) error
	// Closers run at the end of Close, in reverse order.
	Closers []func() error
	Server  *acp.Server

	// index is the catalog index (catalog.go) that session/list shares
	// with the subagent catalog.
	index *projcache.Index
	// running records the markers of this process's running local
	// commands (nil when it could not be opened: the session log's record
	// remains).
	running *local.Running
	// extApprovals are the project agent commands allowed per root session.
	extApprovals externalApprovals
	// context is the context policy of every session (budget).
	context   budget.Config
	detach    func()
	closeOnce sync.Once
	closeErr  error
}

// New builds the composition described by cfg. The caller owns the App and
// must call Close.
//
// It is long on purpose: it is the one place where every part of the
// process is wired to the others, in the order they depend on each other
// (models, storage, catalog, subagents, workspace, caller's hooks, then
// the ACP server's options, one field each); split, the order would be
// spread over several functions sharing a half-built App.
func New(cfg Config) (*App, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("app: no data directory")
	}
	cfg = cfg.withDefaults()
	a := &App{Config: cfg, Log: cfg.Logger, Agents: agent.NewRegistry(), Extensions: map[string]acp.ExtensionFunc{}}
	a.context = contextPolicy(cfg.ContextWindow, cfg.CompactThreshold, settings.Load(cfg.SettingsFile, "").Context())

	var err error
	a.Tools, err = tool.NewRegistry(append([]tool.Tool{todo.New()}, cfg.Tools...)...)
	if err != nil {
		return nil, fmt.Errorf("app: tools: %w", err)
	}
	a.Models, a.ModelErr, err = resolveModels(cfg)
	if err != nil {
		return nil, err
	}
	hooks := cfg.hooks()
	switch len(a.Models) {
	case 0:
	case 1:
		a.Model = a.Models[0].Model
	default:
		a.Model = routedModel{choices: a.Models}
	}
	if a.Model != nil && cfg.WrapModel != nil {
		a.Model = cfg.WrapModel(a.Model)
	}
	if a.Model != nil && hooks.WrapModel != nil {
		a.Model = hooks.WrapModel(a.Model)
	}

	if err := a.openStore(); err != nil {
		return nil, err
	}

	if err := wireCatalog(a); err != nil {
		a.Close()
		return nil, fmt.Errorf("app: wire catalog: %w", err)
	}
	questions, err := a.heldQuestions()
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("app: %w", err)
	}
	a.Extensions[acp.SubagentsListMethod] = acp.SubagentsListExtension(catalogRows{a.Catalog}, questions)
	if err := wireSubagents(a); err != nil {
		a.Close()
		return nil, fmt.Errorf("app: wire subagents: %w", err)
	}
	if err := wireWorkspace(a); err != nil {
		a.Close()
		return nil, fmt.Errorf("app: wire workspace: %w", err)
	}
	if cfg.Wire != nil {
		if err := cfg.Wire(a); err != nil {
			a.Close()
			return nil, fmt.Errorf("app: wire: %w", err)
		}
	}

	if a.running, err = local.OpenRunning(runningDir(cfg.DataDir)); err != nil {
		a.Log.Warn("commands left by this agent if it dies are killed only when their session is next loaded", "err", err)
	} else {
		a.Closers = append(a.Closers, a.running.Close)
	}
	cmds := newLocalCommands(cfg.Sandbox, a.Log, a.running)
	cmds.protected = append([]string{cfg.SettingsFile, cfg.DataDir}, userConfigDir(cfg.SettingsFile)...)
	a.Server, err = acp.New(acp.Options{
		Version:     cfg.Version,
		Sessions:    a.Sessions,
		Stored:      storedSessions{p: a.Persist, index: a.index, cache: a.Cache, call: hooks.StoreCall},
		Durable:     a.Persist.SyncTo,
		DurableText: a.Persist.SyncSoon,
		CachedTitle: func(r acp.StoredSession) (string, bool) {
			if s, live := a.Sessions.Get(r.Header.ID); live {
				return a.liveTitle(s)
			}
			return a.cachedTitle(r.Header, r.Size)
		},
		DescribeDamage: describeDamage(a.Persist),
		Agents:         a.Agents,
		NewAgent:       a.NewAgent,
		Tools:          a.Tools.Get,
		Extensions:     a.Extensions,
		ModelError:     a.ModelErr,
		Auth:           newAuth(a.Models),
		// session/cancel of a child's id interrupts it as interrupt_agent
		// does, with the user's authority over its direct parent.
		InterruptChild: func(childID, parentSessionID string) error {
			return a.Subagents.Interrupt(childID, subagent.UserAuthority(parentSessionID))
		},
		// Workspace fallbacks when the client lacks fs / terminal
		// (workspace.go).
		LocalFiles:      local.Files{},
		LocalCommands:   cmds.For(settings.Sandbox{}),
		SandboxCommands: cmds.For,
		// A session whose person turns the sandbox off (the "sandbox"
		// boolean config option).
		UnsandboxedCommands: cmds.Unsandboxed(),
		// What commands of an agent that died left (markers recorded
		// in the session log) is killed when their session is loaded.
		KillLeftover: local.KillMarked,
		// A root loaded from storage settles the worktrees of foreground
		// children a killed process left (subagent/leftover.go).
		SettleWorktrees: a.Subagents.SettleLeftWorktrees,
		Logger:          a.Log,
		PanicOnBug:      hooks.PanicOnBug,

		NewAgentWithTools: a.NewAgentWithTools,
		Settings:          func(cwd string) *settings.Policy { return settings.Load(cfg.SettingsFile, cwd) },
		// The agent's own settings and data are protected wherever they
		// lie (a cwd that is the home directory holds them).
		Protected: policy.Protector{Files: []string{cfg.SettingsFile}, Dirs: append([]string{cfg.DataDir}, userConfigDir(cfg.SettingsFile)...)},
		// The provider's key never reaches a command (nor do other names
		// that look like secrets: agent/settings).
		SecretEnv: append([]string{cfg.APIKeyEnv}, ProviderKeyVars...),
		MCP:       mcp.Options{StartTimeout: cfg.MCPStartTimeout, Logger: a.Log},
		Commands:  a.commands(),
		// A session whose roots change keeps its recorded prompt but
		// for the environment's list of them (acp/directories.go).
		RewriteSystemPrompt: func(text string, roots []string, client string) (string, bool) {
			text, ok := prompt.WithRoots(text, roots)
			if !ok {
				return text, false
			}
			return prompt.WithClient(text, client), true
		},
		Budget:     a.budget(),
		Models:     pickerOptions(a.Models),
		Images:     anyImages(a.Models),
		ImageInput: a.imageInput,
		Thinking:   a.thinkingSwitch,
		Questions:  questions,
		ChildUsage: a.childUsage,
	})
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// withDefaults fills the unset fields of c.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c
}

// Store returns the live session store (the scenario runner observes it).
func (a *App) Store() *session.Store { return a.Sessions }

// AgentOptions returns the options of a top-level agent on session s:
// the configured model and tools, the system prompt, and the journal that
// makes the session durable (store.go). The subagent runtime derives children's
// options from it.
func (a *App) AgentOptions(s *session.Session) agent.Options {
	return a.agentOptions(s, a.sessionTools(s.Header().Cwd))
}

// agentOptions is AgentOptions with the session's tools given (its
// `subagent` tool offers the agent definitions of its directory).
func (a *App) agentOptions(s *session.Session, tools *tool.Registry) agent.Options {
	id := s.ID()
	// The system prompt is assembled once per session and recorded; its
	// environment probe starts with the agent.
	system, prepare := a.systemPrompt(s, false, "", tools.Get)
	if started := a.Config.hooks().PrepareStarted; started != nil && prepare != nil {
		probe := prepare
		prepare = func(ctx context.Context) { started(id); probe(ctx) }
	}
	return agent.Options{
		Model:         a.Model,
		Route:         a.defaultRoute(),
		RouteNow:      a.sessionRoute(id),
		NoThinking:    a.sessionNoThinking(id),
		ScriptKey:     "main",
		Tools:         tools,
		System:        a.Config.System,
		MaxSteps:      a.Config.MaxSteps,
		SystemPrompt:  system,
		PrepareSystem: prepare,
		Journal:       journal{a},
		Budget:        a.budget(),
		Logger:        a.Log.With("session_id", id),

		AfterCompaction: a.afterCompaction(id),

		// Children get their own (childFactory overrides both).
		Limit:       a.rootLimit(),
		TurnTimeout: a.Config.TurnTimeout,
		StepGate:    a.Config.hooks().StepGate,

		EstimateTokens: a.Config.EstimateTokens,
	}
}

// rootLimit is the tree-limit hook of top-level sessions (nil: none).
func (a *App) rootLimit() agent.LimitFunc {
	if a.Subagents == nil {
		return nil
	}
	return a.Subagents.RootLimit()
}

// afterCompaction is the test-only fault point after a durable compaction.
func (a *App) afterCompaction(id string) func(session.Event) {
	h := a.Config.hooks().AfterCompaction
	if h == nil {
		return nil
	}
	return func(ev session.Event) { h(id, ev.Seq) }
}

// budget is the context policy of every session (top-level and children).
func (a *App) budget() budget.Config {
	c := a.context
	if a.Subagents != nil {
		c.Prices = a.Subagents.Prices() // the user's price overrides
	}
	return c
}

// contextPolicy is the context policy from the flags (window, threshold;
// 0 when not given) and the user settings file's context section: a flag
// wins over the file, the file over the built-in table. --context-window
// is for every model, so it also hides the file's per-model windows.
func contextPolicy(window int, threshold float64, c settings.Context) budget.Config {
	cfg := budget.Config{Window: window, Threshold: threshold}
	if cfg.Threshold == 0 {
		cfg.Threshold = c.CompactThreshold
	}
	if cfg.Window > 0 {
		return cfg
	}
	cfg.Window = c.Window
	for spec, w := range c.Windows {
		provider, id, _ := strings.Cut(spec, "/") // checked by settings.Parse
		if cfg.Windows == nil {
			cfg.Windows = map[model.Route]int{}
		}
		cfg.Windows[model.Route{Provider: provider, Model: id}] = w
	}
	return cfg
}

// NewAgent builds the agent of a top-level session (acp.Options.NewAgent).
func (a *App) NewAgent(s *session.Session) (*agent.Agent, error) {
	return agent.New(s, a.AgentOptions(s)), nil
}

// Serve speaks ACP over in/out until the client closes in or ctx ends,
// then shuts down gracefully: in-flight prompts are cancelled and
// answered, drainers run (subagents settle or are cancelled), agents are
// closed and sessions released, and persistence is flushed. A requested
// stop (ctx) is not an error.
func (a *App) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	err := a.Server.Serve(ctx, in, out)
	if errors.Is(err, acp.ErrServerClosed) {
		err = nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.Config.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, a.shutdown(sctx))
}

func (a *App) shutdown(ctx context.Context) error {
	var errs []error
	errs = append(errs, a.Server.Shutdown(ctx))
	for _, d := range a.Drainers {
		errs = append(errs, d(ctx))
	}
	errs = append(errs, a.Server.Close(ctx))
	if err := a.Persist.FlushAll(ctx); err != nil && !errors.Is(err, persistence.ErrClosed) {
		errs = append(errs, err)
	}
	a.Log.Info("shut down")
	return errors.Join(errs...)
}

// Run is the process: one oklog/run group of the ACP connection (Serve),
// SIGINT/SIGTERM handling and the persistence background flusher. It
// returns when the client closes stdin (nil) or a signal arrives (an error
// matching run.ErrSignal), after the graceful shutdown.
func (a *App) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	// Register for the signals before any actor runs: run.SignalHandler
	// would call signal.Notify on its own goroutine, so a SIGTERM arriving
	// once the client could already talk to us might still find the
	// default action (kill, no flush) in place.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	// A client that stops reading our stdout must not kill the process
	// mid-shutdown: Go ends a program that writes to a broken stdout with
	// SIGPIPE unless SIGPIPE is notified, in which case the write fails
	// with EPIPE and the server shuts down gracefully (acp.Server.Serve).
	// The channel is never read; a full channel drops the signal.
	pipec := make(chan os.Signal, 1)
	signal.Notify(pipec, syscall.SIGPIPE)
	defer signal.Stop(pipec)
	a.Log.Info("serving acp on stdio", "data_dir", a.Config.DataDir, "model", a.Config.Model, "version", a.Config.Version)

	// Setup: kill what the commands of agents that died left running
	// (their sessions may never be loaded again).
	a.sweepLeftovers()
	// And the worktrees a killed agent was making for its children (the
	// intent journal): removed unless a child recorded them.
	a.sweepWorktreeIntents(ctx)
	// Orphans (an MCP server's helper, a command whose reaper was killed)
	// re-parent to this process, are reaped, and are killed when it ends
	// (deferred: after the shutdown stopped the commands).
	if stop, err := local.AdoptOrphans(); err != nil {
		a.Log.Debug("orphans are left to init", "err", err)
	} else {
		defer stop()
	}

	var g run.Group
	{
		sctx, stop := context.WithCancel(ctx)
		g.Add(func() error {
			select {
			case sig := <-sigc:
				return &run.SignalError{Signal: sig}
			case <-sctx.Done():
				return sctx.Err()
			}
		}, func(error) { stop() })
	}
	{
		sctx, stop := context.WithCancel(ctx)
		g.Add(func() error { return a.Serve(sctx, in, out) }, func(error) { stop() })
	}
	{
		fctx, stop := context.WithCancel(ctx)
		g.Add(func() error { return a.Persist.Run(fctx) }, func(error) { stop() })
	}
	return g.Run()
}

// Close detaches and closes persistence and runs the Closers. It is
// idempotent; call it after Serve or Run returned.
func (a *App) Close() error {
	a.closeOnce.Do(func() {
		var errs []error
		if a.detach != nil {
			a.detach()
		}
		if a.Persist != nil {
			errs = append(errs, a.Persist.Close())
		}
		for i := len(a.Closers) - 1; i >= 0; i-- {
			errs = append(errs, a.Closers[i]())
		}
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// userConfigDir is the agent's user config folder (settings, agent
// definitions, skills) when the settings file lies in one
// (<config>/acp-agent/settings.json): protected wherever it is.
func userConfigDir(settingsFile string) []string {
	if settingsFile == "" || filepath.Base(filepath.Dir(settingsFile)) != "acp-agent" {
		return nil
	}
	return []string{filepath.Dir(settingsFile)}
}
