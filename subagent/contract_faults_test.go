package subagent_test

// This file defines the fault hooks of the continuation contract tests
// (CONTRACT_TESTS.md): a stack over real persistence whose storage
// boundary — the session persister and the Durable adapter — can fail or
// block for chosen session ids, and a logger whose output a test reads.

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// faults are hooks keyed by session id; a test sets them before the
// session they name exists (or before the step they hook runs).
type faults struct {
	mu sync.Mutex
	// release is returned by the persister's Release for the id, after the
	// session was really released (an Activation's handle disposal).
	release map[string]error
	// flush runs before Durable.Flush of the id (the best-effort final
	// flush of a disposal); its error replaces the flush.
	flush map[string]func() error
	// inspect and load run before Durable.Inspect / Durable.Load.
	inspect func(ctx context.Context, id string) error
	load    func(ctx context.Context, id string) error
}

func (f *faults) setRelease(id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.release == nil {
		f.release = map[string]error{}
	}
	f.release[id] = err
}

func (f *faults) setFlush(id string, fn func() error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flush == nil {
		f.flush = map[string]func() error{}
	}
	f.flush[id] = fn
}

func (f *faults) setInspect(fn func(ctx context.Context, id string) error) {
	f.mu.Lock()
	f.inspect = fn
	f.mu.Unlock()
}

func (f *faults) setLoad(fn func(ctx context.Context, id string) error) {
	f.mu.Lock()
	f.load = fn
	f.mu.Unlock()
}

// faultyPersister is persistence.Store as the live store's persister,
// with injected Release failures.
type faultyPersister struct {
	*persistence.Store
	f *faults
}

func (p faultyPersister) Release(id string) error {
	err := p.Store.Release(id)
	p.f.mu.Lock()
	injected := p.f.release[id]
	p.f.mu.Unlock()
	if injected != nil {
		return injected
	}
	return err
}

// faultyDurable is the Durable adapter with injected Flush, Inspect and
// Load hooks.
type faultyDurable struct {
	durable
	f *faults
}

func (d faultyDurable) Flush(ctx context.Context, id string) error {
	d.f.mu.Lock()
	hook := d.f.flush[id]
	d.f.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return err
		}
	}
	return d.durable.Flush(ctx, id)
}

func (d faultyDurable) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	d.f.mu.Lock()
	hook := d.f.inspect
	d.f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, id); err != nil {
			return session.Header{}, nil, err
		}
	}
	return d.durable.Inspect(ctx, id)
}

func (d faultyDurable) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	d.f.mu.Lock()
	hook := d.f.load
	d.f.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, id); err != nil {
			return session.Header{}, nil, err
		}
	}
	return d.durable.Load(ctx, id)
}

// logBuf collects a logger's output.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// faultStack is durableStack with fault hooks and a captured log; tune,
// when set, adjusts the stack's configuration.
func faultStack(t *testing.T, m model.Model, tune func(*subagenttest.Config)) (*subagenttest.Stack, *persistence.Store, *faults, *logBuf) {
	t.Helper()
	ps := mustPersistence(t)
	f := &faults{}
	logs := &logBuf{}
	cfg := subagenttest.Config{
		Model:   m,
		Attach:  func(s *session.Store) { s.SetPersister(faultyPersister{ps, f}) },
		Durable: faultyDurable{durable{ps}, f},
		SyncTo:  ps.SyncTo,
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if tune != nil {
		tune(&cfg)
	}
	return subagenttest.New(t, cfg), ps, f, logs
}

// hold is a fault hook that blocks until released and reports when it
// was entered.
type hold struct {
	entered chan struct{}
	release chan struct{}
	inOnce  sync.Once
	outOnce sync.Once
}

func newHold() *hold { return &hold{entered: make(chan struct{}), release: make(chan struct{})} }

func (h *hold) hook() error {
	h.inOnce.Do(func() { close(h.entered) })
	<-h.release
	return nil
}

func (h *hold) open() { h.outOnce.Do(func() { close(h.release) }) }

func (h *hold) waitEntered(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-h.entered:
	case <-ctx.Done():
		t.Fatal("the held step was never reached")
	}
}
