package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSession returns a fresh live session with deterministic sources.
func newSession(t testing.TB) *session.Session {
	t.Helper()
	st := session.NewStore(&session.DeterministicSources{})
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustScript(t testing.TB, y string) model.Model {
	t.Helper()
	sc, err := scripted.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(sc)
}

// newAgent builds an agent and closes it at cleanup.
func newAgent(t testing.TB, s *session.Session, opts agent.Options) *agent.Agent {
	t.Helper()
	a := agent.New(s, opts)
	t.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return a
}

func userMsg(text string) session.Message {
	return session.Message{Content: []session.Block{session.Text(text)}}
}

func types(evs []session.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func ofType(evs []session.Event, typ string) []session.Event {
	var out []session.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func decode[T any](t testing.TB, ev session.Event) T {
	t.Helper()
	v, err := session.DecodeData[T](ev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// userTexts returns the texts of the user/message events, in log order.
func userTexts(t testing.TB, evs []session.Event) []string {
	var out []string
	for _, ev := range ofType(evs, session.TypeUserMessage) {
		out = append(out, session.JoinText(decode[session.Message](t, ev).Content, " "))
	}
	return out
}

func turnEnds(t testing.TB, evs []session.Event) []session.TurnEndReason {
	var out []session.TurnEndReason
	for _, ev := range ofType(evs, session.TypeTurnEnd) {
		out = append(out, decode[session.TurnEndData](t, ev).Reason)
	}
	return out
}

// modelFunc adapts a function to model.Model (a fake at the model boundary).
type modelFunc func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error]

func (f modelFunc) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return f(ctx, req)
}

// recorder wraps a model and keeps every request it saw.
type recorder struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []model.Request
}

func (r *recorder) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Stream(ctx, req)
}

func (r *recorder) requests() []model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]model.Request(nil), r.reqs...)
}

// funcTool is a tool built from a spec and a function.
type funcTool struct {
	spec model.ToolSpec
	fn   func(ctx context.Context, inv tool.Invocation) (tool.Result, error)
}

func (f funcTool) Spec() model.ToolSpec { return f.spec }
func (f funcTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	return f.fn(ctx, inv)
}

const echoSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// echoTool returns its "text" argument.
func echoTool() tool.Tool {
	return funcTool{
		spec: model.ToolSpec{Name: "echo", Description: "echo text", Parameters: json.RawMessage(echoSchema)},
		fn: func(_ context.Context, inv tool.Invocation) (tool.Result, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(inv.Arguments, &args); err != nil {
				return tool.Result{}, err
			}
			return tool.TextResult("echo: "+args.Text, map[string]string{"text": args.Text}), nil
		},
	}
}

func registry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	r, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitEvent blocks until the n-th (1-based) event of type typ exists in s.
func waitEvent(t testing.TB, s *session.Session, typ string, n int) session.Event {
	t.Helper()
	notify := make(chan struct{}, 1)
	unsub := s.Subscribe(func(*session.Session, session.Event) {
		select {
		case notify <- struct{}{}:
		default:
		}
	})
	defer unsub()
	for {
		if evs := ofType(s.MustEvents(), typ); len(evs) >= n {
			return evs[n-1]
		}
		select {
		case <-notify:
		case <-t.Context().Done():
			t.Fatalf("test ended before event %s #%d", typ, n)
		}
	}
}

var errTest = errors.New("test failure")
