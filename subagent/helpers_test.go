package subagent_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// testCtx bounds a test so that a bug hangs it for at most a minute; no
// assertion depends on timing.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// script answers model requests per ScriptKey, by call number. A reply
// function may block (it receives the request context).
type script struct {
	mu      sync.Mutex
	replies map[string][]func(ctx context.Context) ([]session.Chunk, error)
}

func newScript() *script {
	return &script{replies: map[string][]func(context.Context) ([]session.Chunk, error){}}
}

func (s *script) add(key string, fns ...func(ctx context.Context) ([]session.Chunk, error)) *script {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[key] = append(s.replies[key], fns...)
	return s
}

func (s *script) text(key string, texts ...string) *script {
	for _, tx := range texts {
		s.add(key, func(context.Context) ([]session.Chunk, error) { return subagenttest.Text(tx), nil })
	}
	return s
}

func (s *script) call(key, id, name string, args any) *script {
	raw, _ := json.Marshal(args)
	return s.add(key, func(context.Context) ([]session.Chunk, error) {
		return subagenttest.Call(id, name, string(raw)), nil
	})
}

func (s *script) respond(ctx context.Context, req model.Request) ([]session.Chunk, error) {
	s.mu.Lock()
	fns := s.replies[req.Caller.ScriptKey]
	s.mu.Unlock()
	if req.Caller.Call >= len(fns) {
		return subagenttest.Text("(no reply scripted)"), nil
	}
	return fns[req.Caller.Call](ctx)
}

func (s *script) model() *subagenttest.FuncModel { return &subagenttest.FuncModel{Fn: s.respond} }

// gate is a reply that blocks until released, then answers text; a
// cancelled call streams nothing.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) reply(text string) func(ctx context.Context) ([]session.Chunk, error) {
	return func(ctx context.Context) ([]session.Chunk, error) {
		g.entered <- struct{}{}
		select {
		case <-g.release:
			return subagenttest.Text(text), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (g *gate) waitEntered(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-g.entered:
	case <-ctx.Done():
		t.Fatal("model call never started")
	}
}

// lifecycle records lifecycle events and lets a test wait for them.
type lifecycle struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []subagent.LifecycleEvent
}

func record(rt *subagent.Runtime) *lifecycle {
	l := &lifecycle{}
	l.cond = sync.NewCond(&l.mu)
	rt.OnLifecycle(func(ev subagent.LifecycleEvent) {
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	return l
}

func (l *lifecycle) all() []subagent.LifecycleEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// waitEnds waits until n end events for id were emitted ("" = any id) and
// returns them.
func (l *lifecycle) waitEnds(t *testing.T, ctx context.Context, id string, n int) []subagent.LifecycleEvent {
	t.Helper()
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		var ends []subagent.LifecycleEvent
		for _, ev := range l.events {
			if ev.Type == subagent.EventEnd && (id == "" || ev.ID == id) {
				ends = append(ends, ev)
			}
		}
		if len(ends) >= n {
			return ends
		}
		if ctx.Err() != nil {
			t.Fatalf("waited for %d end events of %q, saw %d", n, id, len(ends))
		}
		l.cond.Wait()
	}
}

// userTexts returns the text of the user/message events with the given
// source kind ("" = any).
func userTexts(events []session.Event, kind string) []string {
	var out []string
	for _, ev := range events {
		if ev.Type != session.TypeUserMessage {
			continue
		}
		m, err := session.DecodeData[session.Message](ev)
		if err != nil || (kind != "" && m.Source.Kind != kind) {
			continue
		}
		out = append(out, session.JoinText(m.Content, "\n"))
	}
	return out
}

func userMessages(events []session.Event) []session.Message {
	var out []session.Message
	for _, ev := range events {
		if ev.Type == session.TypeUserMessage {
			m, _ := session.DecodeData[session.Message](ev)
			out = append(out, m)
		}
	}
	return out
}

func turnEnds(events []session.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type == session.TypeTurnEnd {
			d, _ := session.DecodeData[session.TurnEndData](ev)
			out = append(out, d.Reason.Kind)
		}
	}
	return out
}

// Event lookups shared with the other subagent test packages.
var (
	indexOf = subagenttest.IndexOf
	count   = subagenttest.Count
)

// waitIdle waits for a to be idle.
func waitIdle(t *testing.T, ctx context.Context, a *agent.Agent) {
	t.Helper()
	if err := a.WaitIdle(ctx); err != nil {
		t.Fatalf("agent %s never became idle: %v", a.ID(), err)
	}
}

func text(s string) []session.Block { return []session.Block{session.Text(s)} }

// funcModel is a minimal model.Model over a function.
type funcModel struct {
	fn func(ctx context.Context, req model.Request) ([]session.Chunk, error)
}

func (m *funcModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		chunks, err := m.fn(ctx, req)
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
