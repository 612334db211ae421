package inprocess

// This file defines the spawn and fork drivers and the in-process one-shot
// run (subagent-contract.md §2.2 "In-process driver").

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
)

// Driver names.
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

// Option configures a driver.
type Option func(*Provider)

// WithFaults injects f.
func WithFaults(f Faults) Option { return func(p *Provider) { p.faults = f } }

// Provider is an in-process driver.
type Provider struct {
	name   string
	fork   bool
	faults Faults
}

var _ driver.Continuable = (*Provider)(nil)

// Spawn returns the "spawn" driver: fresh children.
func Spawn(opts ...Option) *Provider { return newProvider(SpawnName, false, opts) }

// Fork returns the "fork" driver: children seeded with the parent's
// completed turns.
func Fork(opts ...Option) *Provider { return newProvider(ForkName, true, opts) }

func newProvider(name string, fork bool, opts []Option) *Provider {
	p := &Provider{name: name, fork: fork}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Drivers returns the spawn and fork drivers, for the host's registry.
func Drivers(opts ...Option) []driver.Driver {
	return []driver.Driver{Spawn(opts...), Fork(opts...)}
}

// Name returns the driver name.
func (p *Provider) Name() string { return p.name }

// Capabilities: everything but structured output.
func (p *Provider) Capabilities() driver.Capabilities {
	return driver.Capabilities{DepthLimit: true, ToolFilter: true, Persona: true}
}

// InheritsParentContext is true for fork.
func (p *Provider) InheritsParentContext() bool { return p.fork }

// seed returns a new child's seed: none for spawn, the parent's
// completed-turn prefix for fork.
func (p *Provider) seed(parent *agent.Agent) ([]session.Event, error) {
	if !p.fork {
		return nil, nil
	}
	events, err := parent.Session().Events()
	if err != nil {
		return nil, err
	}
	return forkSeed(events), nil
}

// forkSeed returns the completed-turn prefix of events: everything up to
// and including the last turn/end (nil when no turn completed).
func forkSeed(events []session.Event) []session.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeTurnEnd {
			return slices.Clone(events[:i+1])
		}
	}
	return nil
}

// StartContinuable creates a continuable child through host; the host
// delivers its prompt and owns its activation.
func (p *Provider) StartContinuable(ctx context.Context, host driver.Host, req driver.Request) (*agent.Agent, error) {
	seed, err := p.seed(req.Parent)
	if err != nil {
		return nil, err
	}
	return host.CreateChild(ctx, seed, nil)
}

// ErrAbortedBeforePublication is returned by StartOneShot when its context
// ended before the child was published.
var ErrAbortedBeforePublication = errors.New("subagent request was aborted before child publication")

// StartOneShot publishes a one-shot child, delivers its prompt and returns
// its run. The run settles when the child first becomes quiescent.
func (p *Provider) StartOneShot(ctx context.Context, host driver.Host, req driver.Request) (*driver.Run, error) {
	if ctx.Err() != nil {
		return nil, ErrAbortedBeforePublication
	}
	seed, err := p.seed(req.Parent)
	if err != nil {
		return nil, err
	}
	r := &oneShot{p: p, host: host, seedLength: len(seed)}
	child, err := host.CreateChild(ctx, seed, r.onIdle)
	if err != nil {
		return nil, err
	}
	// Published.
	r.child = child
	r.run = driver.NewRun(child.SessionID(), child, child.Session().Header().DelegationDepth, r.dispose)
	if req.OnUpdate != nil {
		r.unsubscribe = child.Subscribe(func(u agent.Update) { req.OnUpdate(child, u) })
	}
	if p.faults.PublishedRunError != "" {
		r.run.Settle(driver.Result{}, errors.New(p.faults.PublishedRunError))
		return r.run, nil
	}
	if _, err := child.Followup(session.Message{
		Role: session.RoleUser, Content: req.Prompt, Source: session.Source{Kind: session.SourceUser},
	}); err != nil {
		r.run.Settle(driver.Result{}, err)
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
	host       driver.Host
	child      *agent.Agent
	run        *driver.Run
	seedLength int
	cancelled  atomic.Bool

	stopCancel  func() bool
	unsubscribe func()
}

// onIdle settles the run from the child's own log once it is quiescent.
func (r *oneShot) onIdle(*agent.Agent) {
	if r.run != nil {
		r.run.Settle(r.result())
	}
}

// result reads the run's result from the child's own log; a log that
// cannot be read settles the run with the error.
func (r *oneShot) result() (driver.Result, error) {
	events, err := r.child.Session().EventsFrom(r.seedLength)
	if err != nil {
		return driver.Result{}, err
	}
	return driver.Result{
		Output:     agent.FinalOutput(events),
		StopReason: driver.OneShotStopReason(events, r.cancelled.Load()),
		Diagnostic: driver.OneShotDiagnostic(events),
	}, nil
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
	r.run.Settle(r.result())
	if r.unsubscribe != nil {
		r.unsubscribe()
	}
	releaseErr := r.host.ReleaseChild(ctx, r.child)
	if err := errors.Join(closeErr, releaseErr); err != nil {
		return err
	}
	if r.p.faults.DisposeError != "" {
		return errors.New(r.p.faults.DisposeError)
	}
	return nil
}
