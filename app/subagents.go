package app

// This file wires the subagent runtime: the in-process spawn and fork
// providers, the factory that builds child agents, the parent-side tools
// (subagent, subagent_fork, send_message, interrupt_agent, list_agents),
// the child-side report tool, and the runtime's drain at shutdown.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/prompt"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver/external"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// DefaultMaxDepth bounds delegation: a session at this delegationDepth
// gets no delegation tools (subagent-contract.md §2.11, tool default 3).
const DefaultMaxDepth = 3

// wireSubagents attaches the subagent runtime to a.
func wireSubagents(a *App) error {
	budgetOptions, err := a.budgetOptions()
	if err != nil {
		return err
	}
	if a.Catalog != nil {
		a.Catalog.Prices = budgetOptions.Prices // listings price usage as the limits do
	}
	rt := subagent.New(subagent.Options{
		Sessions: a.Sessions,
		Agents:   a.Agents,
		Durable:  durableStore{a.Persist},
		Catalog:  a.Catalog,
		Logger:   a.Log,
		Factory:  a.childFactory,
		// Worktree isolation runs the real git; its queue limit is the
		// flag's, else the person's settings, else the default.
		Worktrees:       worktree.Git{Env: a.Config.hooks().WorktreeGitEnv},
		WorktreeIntents: worktree.Intents{Dir: filepath.Join(a.Config.DataDir, "worktree-intents"), Fault: a.Config.hooks().WorktreeFault},
		MaxBackground:   a.maxBackground(),
		OnQueued:        a.Config.hooks().OnQueued,
		Digest:          subagent.DigestOptions{Sync: a.Config.DigestSync, Ticks: a.Config.hooks().DigestTicks},
		Budgets:         budgetOptions,
	})
	a.Subagents = rt
	// The stall watchdog's sweeper: owned here, stopped and waited for at
	// close.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); rt.WatchStalls(watchCtx) }()
	a.Closers = append(a.Closers, func() error { stopWatch(); <-watchDone; return nil })
	var opts []inprocess.Option
	if f := a.Config.hooks().Faults; f != (inprocess.Faults{}) {
		opts = append(opts, inprocess.WithFaults(f))
	}
	unregister, err := rt.RegisterProviders(append(inprocess.Drivers(opts...), external.NewDriver())...)
	if err != nil {
		return err
	}
	a.Closers = append(a.Closers, func() error { unregister(); return nil })
	for _, t := range append(subagent.ParentTools(rt, 0, a.maxDepth()), subagent.NewListAgents(rt, rt)) {
		if err := a.Tools.Add(t); err != nil {
			return fmt.Errorf("add tool %s: %w", t.Spec().Name, err)
		}
	}
	a.Drainers = append(a.Drainers, rt.Drain)
	return nil
}

// budgetOptions are the runtime's budgets: the person's price overrides,
// the tree limit (flags, else settings) and the stall watchdog.
func (a *App) budgetOptions() (subagent.BudgetOptions, error) {
	pol := settings.Load(a.Config.SettingsFile, "")
	subs := pol.Subagents()
	var o subagent.BudgetOptions
	if ps := pol.Prices(); len(ps) > 0 {
		m := make(map[string]budget.Price, len(ps))
		for k, v := range ps {
			m[k] = budget.Price{Input: v.Input, CachedInput: v.CachedInput, Output: v.Output}
		}
		p, err := budget.NewPrices(m)
		if err != nil {
			return o, fmt.Errorf("settings prices: %w", err)
		}
		o.Prices = p
	}
	o.Tree.MaxTokens, o.Tree.MaxCostUSD = subs.MaxTokens, subs.MaxCostUSD
	if a.Config.TreeMaxTokens > 0 {
		o.Tree.MaxTokens = a.Config.TreeMaxTokens
	}
	if a.Config.TreeMaxCostUSD > 0 {
		o.Tree.MaxCostUSD = a.Config.TreeMaxCostUSD
	}
	if err := o.Tree.Validate(); err != nil {
		return o, fmt.Errorf("settings subagents: %w", err)
	}
	switch v := subs.StallTimeout; v {
	case "":
	case "0", "off":
		o.StallAfter = -1
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf(`settings subagents.stallTimeout %q: want a duration such as "5m", or "off"`, v)
		}
		o.StallAfter = d
	}
	o.InterruptStalled = subs.InterruptStalled
	o.Now = a.Config.hooks().Now
	return o, nil
}

func (a *App) maxBackground() int {
	if a.Config.MaxBackground > 0 {
		return a.Config.MaxBackground
	}
	if n := settings.Load(a.Config.SettingsFile, "").Subagents().MaxBackground; n > 0 {
		return n
	}
	return subagent.DefaultMaxBackground
}

func (a *App) maxDepth() int {
	if a.Config.MaxDepth > 0 {
		return a.Config.MaxDepth
	}
	return DefaultMaxDepth
}

// childFactory builds the agent of a child session: the parent's model
// (or the route its descriptor recorded), the child's script key (its
// label), the report tool plus the parent tools its depth allows, filtered
// by the delegation's tool filter.
func (a *App) childFactory(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
	if d := spec.Definition; d != nil && d.External != nil {
		// Another ACP agent (also on a cold resume: the record names it).
		return a.externalChild(s, spec)
	}
	rt := a.Subagents
	tools := append(subagent.ParentTools(rt, spec.Depth, a.maxDepth()), subagent.NewReportTool(rt), subagent.NewListAgents(rt, rt))
	tools = append(tools, a.WorkspaceTools...)
	// ask_user where the client answers questions (elicitation): the
	// child's question follows the held-question rules (acp).
	if a.Server != nil {
		if t := a.Server.AskUserTool(); t != nil {
			tools = append(tools, t)
		}
	}
	// The child's own `subagent` tool offers the definitions of its
	// directory too (loaded now: a resumed child sees today's files for
	// its own delegations, while it keeps the definition it was started
	// with).
	tools = a.withDefinitions(tools, s.Header().Cwd)
	tools, err := subagent.ChildTools(tools, spec.ToolFilter, func(name string) bool {
		_, ok := a.Tools.Get(name)
		return ok || name == acp.AskUserTool
	})
	if err != nil {
		return nil, err
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		return nil, err
	}
	// A fixed prompt gets the child section appended; else the child's
	// own prompt is assembled (same environment and instructions, plus
	// its delegation section) and recorded in its log.
	system := ""
	if a.Config.System != "" {
		system = a.Config.System + "\n\n" + prompt.ChildSection()
		if spec.Persona != "" {
			system += "\n\n" + spec.Persona
		}
	}
	route := spec.Route
	if route.Provider == "" && route.Model == "" {
		route = a.defaultRoute()
	}
	opts := a.agentOptions(s, reg)
	opts.Route = route
	opts.RouteNow = nil   // a child keeps the route it was delegated with
	opts.NoThinking = nil // a child thinks as its model is configured to
	opts.ScriptKey = spec.Label
	opts.Tools = reg
	opts.System = system
	opts.SystemPrompt, opts.PrepareSystem = a.systemPrompt(s, true, spec.Persona, reg.Get)
	opts.MaxTokens = spec.MaxTokens
	if spec.MaxSteps > 0 {
		opts.MaxSteps = spec.MaxSteps // an agent definition's maxTurns
	}
	// A child runs under its own limits, never the root's.
	opts.Limit, opts.TurnTimeout = spec.Limit, spec.Limits.Timeout
	opts.PreStep = append(opts.PreStep, spec.PreStep...)
	opts.OnIdle = spec.OnIdle
	return agent.New(s, opts), nil
}

// sweepWorktreeIntents removes the worktrees a killed agent was making for
// its children and no child recorded (subagent.SweepWorktreeIntents).
func (a *App) sweepWorktreeIntents(ctx context.Context) {
	if a.Subagents == nil {
		return
	}
	if err := a.Subagents.SweepWorktreeIntents(ctx); err != nil {
		a.Log.Warn("removing the worktrees a stopped agent was making", "err", err)
	}
}

// checkRoute refuses a child's model route that no configured model
// serves: one configured with that route, or another model of the same
// provider (its client serves any model id of its provider). Scripted
// models serve only their own route.
func (a *App) checkRoute(r model.Route) error {
	var ids []string
	for _, c := range a.Models {
		if c.Route == r {
			return nil
		}
		if r.Provider != "" && r.Provider != ScriptProvider && c.Route.Provider == r.Provider {
			return nil
		}
		if c.Route.Provider != "" {
			ids = append(ids, c.ID())
		}
	}
	have := "none with a PROVIDER/MODEL route"
	if len(ids) > 0 {
		have = strings.Join(ids, ", ")
	}
	return fmt.Errorf("model route %q is not configured in this agent (configured: %s); add it with --model, or set the agent definition's model to inherit to use the parent's model", r.Provider+"/"+r.Model, have)
}

// heldQuestions is the ACP server's queue of children's questions, with
// the deadline of the settings file's subagents.questionTimeout.
func (a *App) heldQuestions() (*acp.HeldQuestions, error) {
	var timeout time.Duration
	switch v := settings.Load(a.Config.SettingsFile, "").Subagents().QuestionTimeout; v {
	case "":
	case "0", "off":
		timeout = -1
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf(`settings subagents.questionTimeout %q: want a duration such as "10m", or "off"`, v)
		}
		timeout = d
	}
	return acp.NewHeldQuestions(timeout, a.Config.hooks().QuestionAfter), nil
}

// childUsage is what child spent on its own, for the ACP server's idle
// state snapshots: from its live session, else from the catalog's row
// (the subagentUsage projection); nil when it reported none.
func (a *App) childUsage(ctx context.Context, parent, child string) *acp.Usage {
	var (
		u  budget.Usage
		ok bool
	)
	if a.Subagents != nil {
		u, ok = a.Subagents.Usage(child)
	}
	if !ok && a.Catalog != nil && parent != "" {
		if rows, err := a.Catalog.ListChildren(ctx, parent); err == nil {
			for _, r := range rows {
				if r.ID == child && r.Usage != nil {
					u, ok = *r.Usage, true
				}
			}
		}
	}
	if !ok || u.Responses == 0 {
		return nil
	}
	out := &acp.Usage{TotalTokens: int64(u.Input + u.Output), InputTokens: int64(u.Input), OutputTokens: int64(u.Output)}
	opt := func(n int) *int64 {
		if n == 0 {
			return nil
		}
		v := int64(n)
		return &v
	}
	out.ThoughtTokens, out.CachedReadTokens, out.CachedWriteTokens = opt(u.Reasoning), opt(u.Cached), opt(u.CacheWrite)
	return out
}
