package subagent

// This file defines Runtime, the composition of the runtime's single-owner
// parts, and the options and child-building contract it is wired with.

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/uuid"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/budgets"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

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
	// MaxSteps bounds the model requests of each turn (0: the factory's
	// default): an agent definition's maxTurns, also on cold resume.
	MaxSteps int
	// Definition is the agent definition the child was started from (nil:
	// none), as recorded in its log.
	Definition *AgentDefinition
	// PermissionMode and PermissionScope are the permission mode recorded
	// in the child's descriptor and who granted it ("" follows the root
	// session's mode), also on cold resume: the workspace's permission
	// gate reads the same record from the child's log.
	PermissionMode, PermissionScope string
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
	// Limits are the child's limits (its definition's, narrowed by the
	// call; recorded in a continuable child's seed and read back on cold
	// resume). The factory must install Limit as agent.Options.Limit and
	// Limits.Timeout as agent.Options.TurnTimeout; MaxSteps already
	// carries Limits.MaxTurns.
	Limits budgets.Limits
	Limit  agent.LimitFunc
}

// AgentFactory builds the agent driving a child session. It supplies the
// model, tools, system prompt and checkpointing; it must not start work.
type AgentFactory func(s *session.Session, spec ChildSpec) (*agent.Agent, error)

// Extension codes (documented in doc.go).
const (
	// CodeSessionLocked: the child session is held by another writer
	// (another process); it was not activated.
	CodeSessionLocked Code = "SESSION_LOCKED"
	// CodeInvalidRequest: a malformed request (for example a negative
	// maxDepth).
	CodeInvalidRequest Code = "INVALID_REQUEST"
	// CodeStartPublicationFailed: a publisher (Lifecycle.OnPublish) failed
	// the start edge of a continuable epoch; the start was rolled back.
	CodeStartPublicationFailed Code = "START_PUBLICATION_FAILED"
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
	// Worktrees runs git for worktree isolation (nil: isolation is
	// refused with ISOLATION_FAILED).
	Worktrees Worktrees
	// WorktreeIntents journals each worktree before it is made (a folder
	// in the agent's data directory; Dir "": no journal), so the next
	// process removes what a killed one half-made (SweepWorktreeIntents).
	WorktreeIntents worktree.Intents
	// CheckRoute, when set, refuses a child's model route no configured
	// model serves (a definition naming a model this agent does not
	// have): the start fails with MODEL_NOT_CONFIGURED instead of running
	// on another model. Only routes a start asks for are checked; an
	// inherited route is the parent's own.
	CheckRoute func(model.Route) error
	// MaxBackground limits the background children of one root session
	// resident at once (0: DefaultMaxBackground; negative: no limit).
	MaxBackground int
	// OnQueued, when set, is called each time a start begins to wait for a
	// slot (scenario runs observe the queue through it).
	OnQueued func(parentID, childID string)
	// Digest paces the live digests delegations show of their children
	// (digest.go).
	Digest DigestOptions
	// Budgets are the price overrides, the tree limit and the stall
	// watchdog (spend.go).
	Budgets BudgetOptions
}

// Runtime is the subagent runtime. It only composes its parts, each the
// single owner of its state, and promotes their methods:
//   - Lifecycle: lifecycle listeners (OnLifecycle);
//   - ProviderRegistry: the registered drivers;
//   - Listing: the read side (ListChildren, ListDescendants, AgentStatus);
//   - Continuations: the continuation manager (activations, drains);
//   - Service: start, follow-up, interrupt and report.
//
// It is safe for concurrent use.
type Runtime struct {
	*Lifecycle
	*ProviderRegistry
	*Listing
	*Continuations
	*Service

	spend *spending
}

// New returns a Runtime.
func New(opts Options) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NewRunID == nil {
		opts.NewRunID = uuid.NewString
	}
	lc := &Lifecycle{log: opts.Logger}
	live := liveAgents{reg: opts.Agents}
	spend := newSpending(opts.Budgets)
	if opts.Durable != nil {
		spend.reader = opts.Durable
	}
	kids := &children{sessions: opts.Sessions, agents: opts.Agents, factory: opts.Factory, log: opts.Logger, spend: spend}
	reg := &ProviderRegistry{lc: lc}
	cont := newContinuations(live, kids, opts.Durable, lc, opts.Logger, opts.NewRunID)
	cont.worktrees, cont.onQueued, cont.intents = opts.Worktrees, opts.OnQueued, opts.WorktreeIntents
	if cat, ok := opts.Catalog.(*Catalog); ok && cat != nil && cat.Waiting == nil {
		cat.Waiting = cont.Waiting
	}
	switch {
	case opts.MaxBackground == 0:
		cont.maxBackground = DefaultMaxBackground
	case opts.MaxBackground > 0:
		cont.maxBackground = opts.MaxBackground
	}
	svc := &Service{
		providers: reg, cont: cont, kids: kids, live: live, lc: lc,
		durable: opts.Durable, newRunID: opts.NewRunID, worktrees: opts.Worktrees, digest: opts.Digest, checkRoute: opts.CheckRoute,
	}
	return &Runtime{
		Lifecycle: lc, ProviderRegistry: reg, Listing: &Listing{catalog: opts.Catalog, live: live},
		Continuations: cont, Service: svc, spend: spend,
	}
}
