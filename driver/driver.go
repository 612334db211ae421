package driver

import (
	"context"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Capabilities are the optional request features a driver honours.
type Capabilities struct {
	OutputSchema bool
	DepthLimit   bool
	ToolFilter   bool
	Persona      bool
}

// Driver is a named transport that starts children.
type Driver interface {
	Name() string
	Capabilities() Capabilities
	// InheritsParentContext reports whether children see the parent's
	// completed turns (fork) or start empty (spawn).
	InheritsParentContext() bool
	// StartOneShot publishes a one-shot child through host and delivers
	// req.Prompt. An error means no child was published; after
	// publication every failure settles through the returned Run.
	StartOneShot(ctx context.Context, host Host, req Request) (*Run, error)
}

// Continuable is a Driver that can start continuable children.
// Implementing it IS the continuable capability.
type Continuable interface {
	Driver
	// StartContinuable creates a continuable child through host and
	// returns its agent without starting work: the host delivers the
	// prompt and owns the child (its activation) from then on.
	StartContinuable(ctx context.Context, host Host, req Request) (*agent.Agent, error)
}

// Request is one child start as a driver sees it.
type Request struct {
	// Parent is the delegating agent.
	Parent *agent.Agent
	// Prompt is the one-shot prompt the driver delivers (nil for a
	// continuable child: the host delivers its prompt).
	Prompt []session.Block
	// OnUpdate, when set, receives every update of a one-shot child from
	// before its prompt is delivered until the run is disposed. It runs on
	// the child's loop goroutine: keep it quick.
	OnUpdate func(child *agent.Agent, u agent.Update)
}

// Host is what a driver needs from the runtime hosting its children. A
// Host value serves one start: the runtime has already bound the child's
// identity, depth, route and descriptor to it.
type Host interface {
	// CreateChild creates the child's session seeded with seed (the
	// parent's completed turns for a fork, nil for a fresh child), builds
	// its agent and registers it. onIdle, when non-nil, becomes the agent's
	// idle callback; it must be nil for a continuable child, whose
	// idleness the host owns. On failure nothing stays live.
	CreateChild(ctx context.Context, seed []session.Event, onIdle func(*agent.Agent)) (*agent.Agent, error)
	// ReleaseChild closes a child's agent, unregisters it and removes its
	// session from the live store (which flushes and unlocks it).
	ReleaseChild(ctx context.Context, child *agent.Agent) error
}
