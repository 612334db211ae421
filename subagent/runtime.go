package subagent

// This file defines Runtime: the provider registry, one-shot starts and
// lifecycle events (subagent-contract.md §2.1, §2.2, §2.8). The continuation
// manager (continuable children) lives in continuation.go on the same type.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Capabilities are the optional request features a provider honours.
type Capabilities struct {
	OutputSchema bool
	DepthLimit   bool
	ToolFilter   bool
	Persona      bool
}

// Provider is a named transport that starts one-shot children.
type Provider interface {
	Name() string
	Capabilities() Capabilities
	// InheritsParentContext reports whether children see the parent's
	// completed turns (fork) or start empty (spawn).
	InheritsParentContext() bool
	// Start publishes a child and delivers the prompt. An error means no
	// child was published; after publication every failure settles through
	// the returned Run.
	Start(ctx context.Context, req StartRequest) (*Run, error)
}

// ContinuableProvider is a Provider that can seed continuable children.
// Implementing it IS the continuable capability.
type ContinuableProvider interface {
	Provider
	// PrepareContinuable returns the seed of a new continuable child: nil
	// for a fresh child, the parent's completed-turn prefix for a fork.
	PrepareContinuable(ctx context.Context, req ContinuableRequest) ([]session.Event, error)
}

// ContinuableRequest is what PrepareContinuable sees.
type ContinuableRequest struct {
	Parent *agent.Agent
	Label  string
}

// OneShotRequest is a one-shot delegation (subagent-contract.md §2.2).
type OneShotRequest struct {
	Label  string
	Prompt []session.Block
	Parent *agent.Agent
	// Route overrides the parent's model route (nil: inherit).
	Route *model.Route
	// MaxTokens overrides the parent's limit (0: inherit).
	MaxTokens int
	// MaxDepth caps the child's delegation depth (nil: no cap).
	MaxDepth   *int
	ToolFilter *ToolFilter
	Persona    string
	// OnUpdate, when set, receives every update of the child agent from
	// before its prompt is delivered until the run is disposed (used for
	// tool progress). It runs on the child's loop goroutine: keep it quick.
	OnUpdate func(child *agent.Agent, u agent.Update)
}

// StartRequest is a OneShotRequest resolved by the runtime.
type StartRequest struct {
	OneShotRequest
	// Descriptor is the one-shot descriptor the provider records inside the
	// child's first turn.
	Descriptor Descriptor
}

// Depth returns a pointer to n, for OneShotRequest.MaxDepth and
// ContinuableSpec.MaxDepth.
func Depth(n int) *int { return &n }

// ChildSpec tells the AgentFactory how to build a child agent.
type ChildSpec struct {
	Mode Mode
	// Label keys the scripted model (agent.Options.ScriptKey).
	Label string
	// Route is the child's model route (descriptor agentProvider/agentModel
	// for continuable children).
	Route      model.Route
	MaxTokens  int
	Persona    string
	ToolFilter *ToolFilter
	// Depth is the child's delegationDepth.
	Depth int
	// Parent is the delegating agent (live at creation and on resume).
	Parent *agent.Agent
	// Fresh is false on cold resume: the factory must not append
	// delegated-policy events then.
	Fresh bool
	// PreStep hooks the factory must append AFTER its own hooks (the
	// one-shot descriptor hook has to see the chain's final decision).
	PreStep []agent.PreStepHook
	// OnIdle must be installed as agent.Options.OnIdle.
	OnIdle func(*agent.Agent)
}

// AgentFactory builds the agent driving a child session. It supplies the
// model, tools, system prompt and checkpointing; it must not start work.
type AgentFactory func(s *session.Session, spec ChildSpec) (*agent.Agent, error)

// LifecycleEvent is one lifecycle notification (subagent-contract.md §2.8).
type LifecycleEvent struct {
	// Type is EventStart, EventEnd, EventProviderAdded or
	// EventProviderRemoved.
	Type     string
	RunID    string
	Provider string
	// ID is the child session id.
	ID string
	// ParentID is the delegating parent's session id (listeners scope by it).
	ParentID   string
	Mode       Mode
	Depth      int
	Local      bool
	StopReason string
	// LastAssistantMessage is nil when the child left no output.
	LastAssistantMessage []session.Block
}

// Lifecycle event types.
const (
	EventStart           = "subagent/start"
	EventEnd             = "subagent/end"
	EventProviderAdded   = "subagent/provider-added"
	EventProviderRemoved = "subagent/provider-removed"
)

// Stop reasons of a child run.
const (
	StopCompleted = "completed"
	StopAborted   = "aborted"
	StopError     = "error"
	StopMaxTokens = "max-tokens"
	StopRefusal   = "refusal"
)

// Extension codes (documented in doc.go).
const (
	// CodeSessionLocked: the child session is held by another writer
	// (another process); it was not activated.
	CodeSessionLocked Code = "SESSION_LOCKED"
	// CodeInvalidRequest: a malformed request (for example a negative
	// maxDepth).
	CodeInvalidRequest Code = "INVALID_REQUEST"
)

// ErrSessionLocked must be matched (errors.Is) by the error Durable.Load
// returns when another writer holds the session.
var ErrSessionLocked = errors.New("session is locked by another writer")

// Durable is what the runtime needs from session persistence (the
// catalog's SessionReader plus the write-side calls of cold resume). The
// composition root adapts persistence.Store to it.
type Durable interface {
	SessionReader
	// Load takes the single-writer lock, repairs, and returns the log; the
	// lock is kept until Release (or until the session, adopted into the
	// live store, is removed from it). A lock held by another writer must
	// match ErrSessionLocked (errors.Is).
	Load(ctx context.Context, id string) (session.Header, []session.Event, error)
	// Release gives up a lock taken by Load (used when adoption fails).
	Release(id string) error
	// Flush makes everything appended to id so far durable.
	Flush(ctx context.Context, id string) error
}

// Options configure a Runtime.
type Options struct {
	// Sessions is the live session store (required).
	Sessions *session.Store
	// Agents is the live agent registry; nil disables continuable children
	// (CONTINUATION_UNAVAILABLE), as in the contract.
	Agents *agent.Registry
	// Factory builds child agents (required to start children).
	Factory AgentFactory
	// Durable is session persistence; nil disables continuable children
	// (PERSISTENCE_UNAVAILABLE).
	Durable Durable
	// Catalog serves ListChildren/ListDescendants (nil: listing fails with
	// SUBAGENT_CONTROL_PROJECTIONS_UNAVAILABLE).
	Catalog Lister
	Logger  *slog.Logger
	// NewRunID mints lifecycle run ids (default: random UUIDs).
	NewRunID func() string
}

// Runtime is the subagent runtime: provider registry, one-shot starts,
// the continuation manager and lifecycle events. It is safe for concurrent
// use.
type Runtime struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	providers []Provider
	listeners []*listener

	cont continuation
}

type listener struct{ fn func(LifecycleEvent) }

// New returns a Runtime.
func New(opts Options) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NewRunID == nil {
		opts.NewRunID = uuid.NewString
	}
	rt := &Runtime{opts: opts, log: opts.Logger}
	rt.cont.init()
	return rt
}

// Sessions returns the live session store.
func (rt *Runtime) Sessions() *session.Store { return rt.opts.Sessions }

// Agents returns the live agent registry (may be nil).
func (rt *Runtime) Agents() *agent.Registry { return rt.opts.Agents }

// Logger returns the runtime's logger.
func (rt *Runtime) Logger() *slog.Logger { return rt.log }

// RegisterProvider adds p. The returned function removes it again.
func (rt *Runtime) RegisterProvider(p Provider) (unregister func(), err error) {
	rt.mu.Lock()
	for _, q := range rt.providers {
		if q.Name() == p.Name() {
			rt.mu.Unlock()
			return nil, Errorf(CodeDuplicateProvider, "a subagent provider named %q is already registered", p.Name())
		}
	}
	rt.providers = append(rt.providers, p)
	rt.mu.Unlock()
	rt.emit(LifecycleEvent{Type: EventProviderAdded, Provider: p.Name()})
	var once sync.Once
	return func() {
		once.Do(func() {
			rt.mu.Lock()
			rt.providers = slices.DeleteFunc(rt.providers, func(q Provider) bool { return q == p })
			rt.mu.Unlock()
			rt.emit(LifecycleEvent{Type: EventProviderRemoved, Provider: p.Name()})
		})
	}, nil
}

// GetProvider returns the provider registered under name.
func (rt *Runtime) GetProvider(name string) (Provider, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, p := range rt.providers {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Providers returns the registered provider names in registration order.
func (rt *Runtime) Providers() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]string, len(rt.providers))
	for i, p := range rt.providers {
		out[i] = p.Name()
	}
	return out
}

// OnLifecycle registers fn for every lifecycle event. fn runs
// synchronously on the goroutine that caused the event; a panic in fn is
// contained and logged. The returned function unregisters it.
func (rt *Runtime) OnLifecycle(fn func(LifecycleEvent)) (unsubscribe func()) {
	l := &listener{fn: fn}
	rt.mu.Lock()
	rt.listeners = append(rt.listeners, l)
	rt.mu.Unlock()
	return func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rt.listeners = slices.DeleteFunc(rt.listeners, func(x *listener) bool { return x == l })
	}
}

func (rt *Runtime) emit(ev LifecycleEvent) {
	rt.mu.Lock()
	ls := slices.Clone(rt.listeners)
	rt.mu.Unlock()
	for _, l := range ls {
		func() {
			defer func() {
				if p := recover(); p != nil {
					rt.log.Warn(fmt.Sprintf("subagent: %s listener threw: %v", ev.Type, p))
				}
			}()
			l.fn(ev)
		}()
	}
}

// ValidateMaxDepth checks a requested depth cap.
func ValidateMaxDepth(maxDepth *int) error {
	if maxDepth != nil && *maxDepth < 0 {
		return NewError(CodeInvalidRequest, "subagent maxDepth must be a non-negative safe integer")
	}
	return nil
}

// ChildDepth returns the delegation depth of a child of parent: the
// parent's header delegationDepth + 1, checked against maxDepth.
func ChildDepth(parent *agent.Agent, maxDepth *int) (int, error) {
	if err := ValidateMaxDepth(maxDepth); err != nil {
		return 0, err
	}
	d := parent.Session().Header().DelegationDepth + 1
	if maxDepth != nil && d > *maxDepth {
		return 0, &SubagentDepthError{AttemptedDepth: d, MaxDepth: *maxDepth}
	}
	return d, nil
}

// ResolveRoute returns the child route: the override's fields, else the
// parent's.
func ResolveRoute(parent *agent.Agent, override *model.Route) model.Route {
	r := parent.Options().Route
	if override != nil {
		if override.Provider != "" {
			r.Provider = override.Provider
		}
		if override.Model != "" {
			r.Model = override.Model
		}
	}
	return r
}

// Start starts a one-shot child through the named provider
// (subagent-contract.md §2.2). Every check runs before the provider is
// called; a provider error means no child and no lifecycle events.
func (rt *Runtime) Start(ctx context.Context, providerName string, req OneShotRequest) (*Run, error) {
	p, ok := rt.GetProvider(providerName)
	if !ok {
		return nil, Errorf(CodeNoProvider, "no subagent provider registered for %q", providerName)
	}
	if err := checkCapabilities(p, req.MaxDepth != nil, req.ToolFilter != nil, req.Persona != ""); err != nil {
		return nil, err
	}
	if err := ValidateMaxDepth(req.MaxDepth); err != nil {
		return nil, err
	}
	if req.Parent == nil {
		return nil, NewError(CodeInvalidRequest, "subagent request has no parent agent")
	}
	desc := Descriptor{Version: DescriptorVersion, Mode: ModeOneShot, Provider: providerName, Label: req.Label}
	if _, err := desc.Snapshot(); err != nil {
		return nil, err
	}
	run, err := p.Start(ctx, StartRequest{OneShotRequest: req, Descriptor: desc})
	if err != nil {
		return nil, err
	}
	info := LifecycleEvent{
		RunID: rt.opts.NewRunID(), Provider: providerName, ID: run.ID, ParentID: req.Parent.ID(),
		Mode: ModeOneShot, Depth: run.Depth, Local: run.LocalAgent != nil,
	}
	start := info
	start.Type = EventStart
	rt.emit(start)
	run.observe(func(res Result, err error) {
		end := info
		end.Type = EventEnd
		if err != nil {
			end.StopReason = StopError
		} else {
			end.StopReason = res.StopReason
			if len(res.Output) > 0 {
				end.LastAssistantMessage = res.Output
			}
		}
		rt.emit(end)
	})
	return run, nil
}

func checkCapabilities(p Provider, depth, filter, persona bool) error {
	c := p.Capabilities()
	missing := ""
	switch {
	case depth && !c.DepthLimit:
		missing = "depthLimit"
	case filter && !c.ToolFilter:
		missing = "toolFilter"
	case persona && !c.Persona:
		missing = "persona"
	}
	if missing != "" {
		return Errorf(CodeUnsupportedCapability, "subagent provider %q does not support the %q capability", p.Name(), missing)
	}
	return nil
}

// CreateChild creates a child session with header h and seed, builds its
// agent through the factory and registers it in the agent registry. On
// failure nothing stays live.
func (rt *Runtime) CreateChild(h session.Header, seed []session.Event, spec ChildSpec) (*agent.Agent, error) {
	if rt.opts.Factory == nil || rt.opts.Sessions == nil {
		return nil, NewError(CodeInvalidRequest, "subagent runtime has no agent factory or session store")
	}
	s, err := rt.opts.Sessions.Create(h, session.CreateOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	return rt.buildAgent(s, spec)
}

func (rt *Runtime) buildAgent(s *session.Session, spec ChildSpec) (*agent.Agent, error) {
	a, err := rt.opts.Factory(s, spec)
	if err != nil {
		rt.removeSession(s.ID())
		return nil, err
	}
	if reg := rt.opts.Agents; reg != nil {
		if err := reg.Register(a); err != nil {
			_ = a.Close(context.Background())
			rt.removeSession(s.ID())
			return nil, err
		}
	}
	return a, nil
}

func (rt *Runtime) removeSession(id string) {
	if err := rt.opts.Sessions.Remove(id); err != nil {
		rt.log.Warn("subagent: releasing child session failed", "session", id, "err", err)
	}
}

// ReleaseChild closes a child agent, unregisters it and removes its session
// from the live store (which flushes and releases it in persistence).
func (rt *Runtime) ReleaseChild(ctx context.Context, a *agent.Agent) error {
	closeErr := a.Close(ctx)
	if reg := rt.opts.Agents; reg != nil {
		reg.Unregister(a)
	}
	rmErr := rt.opts.Sessions.Remove(a.SessionID())
	return errors.Join(closeErr, rmErr)
}

// ChildHeader returns the header of a new child of parent.
func ChildHeader(parent *agent.Agent, id string, depth, seedLength int) session.Header {
	ph := parent.Session().Header()
	return session.Header{
		ID:              id,
		Cwd:             ph.Cwd,
		ParentSession:   parent.SessionID(),
		SeedLength:      seedLength,
		Origin:          session.OriginSubagent,
		DelegationDepth: depth,
	}
}

// ForkSeed returns the completed-turn prefix of events: everything up to
// and including the last turn/end (nil when no turn completed).
func ForkSeed(events []session.Event) []session.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeTurnEnd {
			return slices.Clone(events[:i+1])
		}
	}
	return nil
}

// DescriptorHook returns the pre-step hook that appends desc inside the
// child's first entered turn (subagent-contract.md §1.4, one-shot
// placement). It must be the last hook of the chain.
func DescriptorHook(desc Descriptor) agent.PreStepHook {
	return func(ctx context.Context, a *agent.Agent, step agent.StepInfo) (agent.Decision, error) {
		if !step.FirstEnter {
			return agent.Enter, nil
		}
		data, err := desc.Snapshot()
		if err != nil {
			return agent.Enter, err
		}
		if _, err := a.Session().AppendRaw(session.TypeDescriptor, data); err != nil {
			return agent.Enter, err
		}
		return agent.Enter, nil
	}
}

// ListChildren lists parentID's session-backed children (catalog §3.2).
func (rt *Runtime) ListChildren(ctx context.Context, parentID string) ([]ListEntry, error) {
	if rt.opts.Catalog == nil {
		return nil, NewError(CodeProjectionsUnavailable, "subagent listing requires session projections")
	}
	return rt.opts.Catalog.ListChildren(ctx, parentID)
}

// ListDescendants lists every session-backed descendant of rootID in
// pre-order (catalog §3.3).
func (rt *Runtime) ListDescendants(ctx context.Context, rootID string) ([]DescendantEntry, error) {
	if rt.opts.Catalog == nil {
		return nil, NewError(CodeProjectionsUnavailable, "subagent listing requires session projections")
	}
	return rt.opts.Catalog.ListDescendants(ctx, rootID)
}

// AgentStatus reports the live registry's view of id (list_agents status).
func (rt *Runtime) AgentStatus(id string) (status string, live bool) {
	a := rt.live(id)
	if a == nil {
		return "", false
	}
	if a.Status() == agent.StatusRunning {
		return StatusRunning, true
	}
	return StatusIdle, true
}

var (
	_ Lister      = (*Runtime)(nil)
	_ AgentStatus = (*Runtime)(nil)
)
