package subagenttest

import (
	"context"
	"iter"
	"log/slog"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// Responder answers one model request with the chunks of a reply.
type Responder func(ctx context.Context, req model.Request) ([]session.Chunk, error)

// FuncModel is a model.Model that calls Fn and records every request.
type FuncModel struct {
	Fn Responder

	mu       sync.Mutex
	requests []model.Request
}

// Stream implements model.Model.
func (m *FuncModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	return func(yield func(session.Chunk, error) bool) {
		chunks, err := m.Fn(ctx, req)
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if err != nil {
			yield(session.Chunk{}, err)
		}
	}
}

// Requests returns the requests made so far by sessions whose ScriptKey is
// key ("" for all).
func (m *FuncModel) Requests(key string) []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []model.Request
	for _, r := range m.requests {
		if key == "" || r.Caller.ScriptKey == key {
			out = append(out, r)
		}
	}
	return out
}

// Text returns the chunks of a plain text reply.
func Text(s string) []session.Chunk {
	return []session.Chunk{{Type: session.ChunkText, Text: s}, {Type: session.ChunkFinish, Finish: model.FinishStop}}
}

// Truncated returns the chunks of a reply cut off by the token limit.
func Truncated(s string) []session.Chunk {
	return []session.Chunk{{Type: session.ChunkText, Text: s}, {Type: session.ChunkFinish, Finish: model.FinishLength}}
}

// Call returns the chunks of a reply that calls one tool.
func Call(id, name, args string) []session.Chunk {
	return []session.Chunk{
		{Type: session.ChunkToolCall, Index: 0, ID: id, Name: name, Arguments: args},
		{Type: session.ChunkFinish, Finish: model.FinishToolCalls},
	}
}

// Hang blocks until ctx ends, then returns its cause (a hanging model call).
func Hang(ctx context.Context) ([]session.Chunk, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// Config configures a Stack.
type Config struct {
	Model model.Model
	// Sources for the session store (nil: wall clock and random ids).
	Sources session.Sources
	// Attach, when set, is called with the new store before anything is
	// created (persistence attaches itself as persister and observer).
	Attach func(*session.Store)
	// Durable is passed to the Runtime (nil: no continuable children).
	Durable subagent.Durable
	// SyncTo, when set, is every agent's agent.Journal.SyncTo (Shown is a
	// no-op: nothing shows a stack's sessions).
	SyncTo func(ctx context.Context, id string, seq int64) error
	// Faults are injected into the in-process providers.
	Faults inprocess.Faults
	// MaxDepth is the delegation depth budget of the tools (default 3).
	MaxDepth int
	// ChildPreStep hooks run first in every child's chain.
	ChildPreStep []agent.PreStepHook
	// Logger is the runtime's logger (nil: slog.Default()).
	Logger *slog.Logger
	// WrapFactory, when set, wraps the child agent factory (fault
	// injection at materialization).
	WrapFactory func(subagent.AgentFactory) subagent.AgentFactory
	// Worktrees and MaxBackground are passed to the Runtime.
	Worktrees     subagent.Worktrees
	MaxBackground int
	// WorktreeIntents is subagent.Options.WorktreeIntents.
	WorktreeIntents worktree.Intents
	// CheckRoute is subagent.Options.CheckRoute.
	CheckRoute func(model.Route) error
	// Budgets are subagent.Options.Budgets (prices, tree limit, watchdog).
	Budgets subagent.BudgetOptions
	// ParentCwd is the cwd of NewParent's sessions (default /workspace).
	ParentCwd string
}

// Stack is a wired subagent stack.
type Stack struct {
	Sessions *session.Store
	Agents   *agent.Registry
	Runtime  *subagent.Runtime
	Model    model.Model
	cfg      Config
}

// New builds a stack. The runtime is drained and every registered agent
// closed at test cleanup.
func New(t testing.TB, cfg Config) *Stack {
	t.Helper()
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = subagent.DefaultMaxDepth
	}
	st := session.NewStore(cfg.Sources)
	if cfg.Attach != nil {
		cfg.Attach(st)
	}
	s := &Stack{Sessions: st, Agents: agent.NewRegistry(), Model: cfg.Model, cfg: cfg}
	factory := s.Factory()
	if cfg.WrapFactory != nil {
		factory = cfg.WrapFactory(factory)
	}
	s.Runtime = subagent.New(subagent.Options{
		Sessions: st, Agents: s.Agents, Durable: cfg.Durable, Factory: factory, Logger: cfg.Logger,
		Worktrees: cfg.Worktrees, MaxBackground: cfg.MaxBackground, Budgets: cfg.Budgets,
		WorktreeIntents: cfg.WorktreeIntents, CheckRoute: cfg.CheckRoute,
	})
	if _, err := s.Runtime.RegisterProviders(inprocess.Drivers(inprocess.WithFaults(cfg.Faults))...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Close drains the runtime and closes every registered agent.
func (s *Stack) Close() {
	ctx := context.Background()
	_ = s.Runtime.Drain(ctx)
	for _, a := range s.Agents.List() {
		_ = a.Close(ctx)
		s.Agents.Unregister(a)
	}
}

// Tools returns the tool registry of an agent at depth.
func (s *Stack) Tools(depth int, child bool) *tool.Registry {
	tools := subagent.ParentTools(s.Runtime, depth, s.cfg.MaxDepth)
	if child {
		tools = append(tools, subagent.NewReportTool(s.Runtime))
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		panic(err)
	}
	return reg
}

// childTools is the tool registry of a child: the tools of its depth
// with the report tool, filtered by its delegation's tool filter against
// the top-level tool set.
func (s *Stack) childTools(spec subagent.ChildSpec) (*tool.Registry, error) {
	tools := subagent.ParentTools(s.Runtime, spec.Depth, s.cfg.MaxDepth)
	tools = append(tools, subagent.NewReportTool(s.Runtime))
	root := s.Tools(0, false)
	tools, err := subagent.ChildTools(tools, spec.ToolFilter, func(name string) bool {
		_, ok := root.Get(name)
		return ok
	})
	if err != nil {
		return nil, err
	}
	return tool.NewRegistry(tools...)
}

// journal is the agents' agent.Journal (nil without Config.SyncTo).
func (s *Stack) journal() agent.Journal {
	if s.cfg.SyncTo == nil {
		return nil
	}
	return syncOnly(s.cfg.SyncTo)
}

// syncOnly is an agent.Journal whose sessions nobody shows.
type syncOnly func(ctx context.Context, id string, seq int64) error

func (f syncOnly) SyncTo(ctx context.Context, id string, seq int64) error { return f(ctx, id, seq) }

func (syncOnly) Shown(context.Context, string, int64) error { return nil }

// Factory returns the agent factory children are built with.
func (s *Stack) Factory() subagent.AgentFactory {
	return func(sess *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
		tools, err := s.childTools(spec)
		if err != nil {
			return nil, err
		}
		return agent.New(sess, agent.Options{
			Model: s.Model, Route: spec.Route, ScriptKey: spec.Label, Tools: tools,
			MaxTokens: spec.MaxTokens, MaxSteps: spec.MaxSteps, PreStep: append(append([]agent.PreStepHook(nil), s.cfg.ChildPreStep...), spec.PreStep...),
			Journal: s.journal(), OnIdle: spec.OnIdle, Limit: spec.Limit, TurnTimeout: spec.Limits.Timeout,
		}), nil
	}
}

// NewParent creates a top-level session id and its registered agent.
func (s *Stack) NewParent(t testing.TB, id string) *agent.Agent {
	t.Helper()
	cwd := s.cfg.ParentCwd
	if cwd == "" {
		cwd = "/workspace"
	}
	sess, err := s.Sessions.Create(session.Header{ID: id, Cwd: cwd}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Register(t, sess)
}

// Register builds and registers the top-level agent of sess.
func (s *Stack) Register(t testing.TB, sess *session.Session) *agent.Agent {
	t.Helper()
	a := agent.New(sess, agent.Options{
		Model: s.Model, Route: model.Route{Provider: "mock", Model: "mock"}, Tools: s.Tools(sess.Header().DelegationDepth, false),
		Journal: s.journal(), Limit: s.Runtime.RootLimit(),
	})
	if err := s.Agents.Register(a); err != nil {
		t.Fatal(err)
	}
	return a
}

// Live returns the registered agent id, or nil.
func (s *Stack) Live(id string) *agent.Agent {
	a, _ := s.Agents.Get(id)
	return a
}
