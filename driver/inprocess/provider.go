package inprocess

// This file defines the spawn and fork providers and the in-process
// one-shot run (subagent-contract.md §2.2 "In-process driver").

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

// Provider names.
const (
	SpawnName = "spawn"
	ForkName  = "fork"
)

// Faults injects failures into published one-shot children, for scenarios
// that pin failure rendering. With PublishedRunError set, a published
// child's run fails with that message before its prompt is delivered;
// with DisposeError set, disposing it fails with that message after the
// child was really released.
type Faults struct {
	PublishedRunError string
	DisposeError      string
}

// Option configures a provider.
type Option func(*Provider)

// WithFaults injects f.
func WithFaults(f Faults) Option { return func(p *Provider) { p.faults = f } }

// Provider is an in-process provider.
type Provider struct {
	rt     *subagent.Runtime
	name   string
	fork   bool
	faults Faults
}

var _ subagent.ContinuableProvider = (*Provider)(nil)

// Spawn returns the "spawn" provider: fresh children.
func Spawn(rt *subagent.Runtime, opts ...Option) *Provider {
	return newProvider(rt, SpawnName, false, opts)
}

// Fork returns the "fork" provider: children seeded with the parent's
// completed turns.
func Fork(rt *subagent.Runtime, opts ...Option) *Provider {
	return newProvider(rt, ForkName, true, opts)
}

func newProvider(rt *subagent.Runtime, name string, fork bool, opts []Option) *Provider {
	p := &Provider{rt: rt, name: name, fork: fork}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Register registers the spawn and fork providers on rt.
func Register(rt *subagent.Runtime, opts ...Option) (unregister func(), err error) {
	u1, err := rt.RegisterProvider(Spawn(rt, opts...))
	if err != nil {
		return nil, err
	}
	u2, err := rt.RegisterProvider(Fork(rt, opts...))
	if err != nil {
		u1()
		return nil, err
	}
	return func() { u2(); u1() }, nil
}

// Name returns the provider name.
func (p *Provider) Name() string { return p.name }

// Capabilities: everything but structured output.
func (p *Provider) Capabilities() subagent.Capabilities {
	return subagent.Capabilities{DepthLimit: true, ToolFilter: true, Persona: true}
}

// InheritsParentContext is true for fork.
func (p *Provider) InheritsParentContext() bool { return p.fork }

// PrepareContinuable returns the seed of a continuable child: none for
// spawn, the parent's completed-turn prefix for fork.
func (p *Provider) PrepareContinuable(ctx context.Context, req subagent.ContinuableRequest) ([]session.Event, error) {
	if !p.fork {
		return nil, nil
	}
	return subagent.ForkSeed(req.Parent.Session().Events()), nil
}

// ErrAbortedBeforePublication is returned by Start when its context ended
// before the child was published.
var ErrAbortedBeforePublication = errors.New("subagent request was aborted before child publication")

// Start publishes a one-shot child, delivers its prompt and returns its
// run. The run settles when the child first becomes quiescent.
func (p *Provider) Start(ctx context.Context, req subagent.StartRequest) (*subagent.Run, error) {
	if err := subagent.ValidateMaxDepth(req.MaxDepth); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ErrAbortedBeforePublication
	}
	parent := req.Parent
	depth, err := subagent.ChildDepth(parent, req.MaxDepth)
	if err != nil {
		return nil, err
	}
	var seed []session.Event
	if p.fork {
		seed = subagent.ForkSeed(parent.Session().Events())
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = parent.Options().MaxTokens
	}
	r := &oneShot{p: p, seedLength: len(seed)}
	spec := subagent.ChildSpec{
		Mode: subagent.ModeOneShot, Label: req.Label, Route: subagent.ResolveRoute(parent, req.Route),
		MaxTokens: maxTokens, Persona: req.Persona, ToolFilter: req.ToolFilter, Depth: depth, Parent: parent,
		Fresh: true, PreStep: []agent.PreStepHook{subagent.DescriptorHook(req.Descriptor)}, OnIdle: r.onIdle,
	}
	id := parent.Session().NewID()
	child, err := p.rt.CreateChild(subagent.ChildHeader(parent, id, depth, len(seed)), seed, spec)
	if err != nil {
		return nil, err
	}
	// Published.
	r.child = child
	r.run = subagent.NewRun(id, child, depth, r.dispose)
	if req.OnUpdate != nil {
		r.unsubscribe = child.Subscribe(func(u agent.Update) { req.OnUpdate(child, u) })
	}
	if p.faults.PublishedRunError != "" {
		r.run.Settle(subagent.Result{}, errors.New(p.faults.PublishedRunError))
		return r.run, nil
	}
	if _, err := child.Followup(session.Message{
		Role: session.RoleUser, Content: req.Prompt, Source: session.Source{Kind: session.SourceUser},
	}); err != nil {
		r.run.Settle(subagent.Result{}, err)
		return r.run, nil
	}
	// Registered only once the prompt is queued: a signal that ended
	// during publication then fires right away and cancels the prompt
	// (drops it, or aborts the turn that claimed it). Registered before
	// the Followup, its Cancel could find an empty inbox and be lost.
	r.stopCancel = context.AfterFunc(ctx, func() {
		r.cancelled.Store(true)
		child.Cancel(session.AbortReason{Kind: agent.AbortParent}, false)
	})
	return r.run, nil
}

// oneShot is the state of one in-process one-shot run.
type oneShot struct {
	p          *Provider
	child      *agent.Agent
	run        *subagent.Run
	seedLength int
	cancelled  atomic.Bool

	stopCancel  func() bool
	unsubscribe func()
}

// onIdle settles the run from the child's own log once it is quiescent.
func (r *oneShot) onIdle(*agent.Agent) {
	if r.run != nil {
		r.run.Settle(r.result(), nil)
	}
}

func (r *oneShot) result() subagent.Result {
	events := r.child.Session().EventsFrom(r.seedLength)
	return subagent.Result{
		Output:     agent.FinalOutput(events),
		StopReason: subagent.OneShotStopReason(events, r.cancelled.Load()),
	}
}

// dispose cancels and releases the child (Run.Dispose calls it once).
func (r *oneShot) dispose(ctx context.Context) error {
	if r.stopCancel != nil {
		r.stopCancel()
	}
	r.cancelled.Store(true)
	// Close cancels an open turn and waits for the loop to exit; the
	// result reflects the cancellation when the run had not settled.
	closeErr := r.child.Close(ctx)
	r.run.Settle(r.result(), nil)
	if r.unsubscribe != nil {
		r.unsubscribe()
	}
	releaseErr := r.p.rt.ReleaseChild(ctx, r.child)
	if err := errors.Join(closeErr, releaseErr); err != nil {
		return err
	}
	if r.p.faults.DisposeError != "" {
		return errors.New(r.p.faults.DisposeError)
	}
	return nil
}
