package agent_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/compact"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// windowed is a fake provider with a hidden context window: a request
// estimated above it is refused with model.ErrContextLength (stating the
// window when say is set); a summary request is answered with a short
// summary; a turn's first request may call the big tool once.
type windowed struct {
	window int
	say    bool
	mu     sync.Mutex
	reqs   []model.Request
	// callTool makes the first request of the session call "big".
	callTool bool
}

func (m *windowed) Stream(_ context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	first := len(m.reqs) == 1
	m.mu.Unlock()
	return func(yield func(session.Chunk, error) bool) {
		if est := budget.EstimateRequest(req); est > m.window {
			msg := "too long"
			if m.say {
				msg = fmt.Sprintf("This model's maximum context length is %d tokens", m.window)
			}
			yield(session.Chunk{}, fmt.Errorf("%w: %s (%d)", model.ErrContextLength, msg, est))
			return
		}
		if first && m.callTool {
			if yield(session.Chunk{Type: session.ChunkToolCall, ID: "b1", Name: "big", Arguments: "{}"}, nil) {
				yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishToolCalls}, nil)
			}
			return
		}
		if yield(session.Chunk{Type: session.ChunkText, Text: "answered"}, nil) {
			yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
		}
	}
}

func bigTool(size int) tool.Tool {
	return funcTool{
		spec: model.ToolSpec{Name: "big", Parameters: []byte(`{"type":"object"}`)},
		fn: func(context.Context, tool.Invocation) (tool.Result, error) {
			return tool.TextResult("START "+strings.Repeat("line of output\n", size/15)+" END", nil), nil
		},
	}
}

// TestNewestTurnTooBigIsNotStuck: a newest turn that alone does not fit
// (a huge tool result with an unknown window; a huge pasted prompt with a
// known window, an unknown one, and one the refusal states) is answered
// with the middle of the oversized text cut from the model's view, marked;
// the log keeps the full text; and the session answers the next prompt.
func TestNewestTurnTooBigIsNotStuck(t *testing.T) {
	const size = 600_000 // bytes: about 200k estimated tokens
	huge := "PASTE " + strings.Repeat("pasted text, ", size/13) + " TAIL"
	for _, tt := range []struct {
		name   string
		m      *windowed
		budget budget.Config
		prompt string
	}{
		{"huge tool result, unknown window", &windowed{window: 50_000, callTool: true}, budget.Config{}, "run it"},
		{"huge pasted prompt, known window", &windowed{window: 50_000}, budget.Config{Window: 50_000}, huge},
		{"huge pasted prompt, unknown window", &windowed{window: 50_000}, budget.Config{}, huge},
		{"huge pasted prompt, window in the refusal", &windowed{window: 50_000, say: true}, budget.Config{}, huge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			a := newAgent(t, s, agent.Options{Model: tt.m, Tools: registry(t, bigTool(size)), Budget: tt.budget})
			for _, p := range []string{tt.prompt, "and now?"} {
				res, err := a.Prompt(t.Context(), userMsg(p))
				if err != nil {
					t.Fatal(err)
				}
				if res.Reason.Kind != session.TurnEndCompleted || session.JoinText(res.Output, "") != "answered" {
					t.Fatalf("prompt %.10q: %+v %+v, want answered", p, res.Reason, res.Reason.Error)
				}
			}
			tt.m.mu.Lock()
			last := tt.m.reqs[len(tt.m.reqs)-1]
			tt.m.mu.Unlock()
			text := allText(last.Messages)
			if !strings.Contains(text, "cut from the middle of this text") {
				t.Errorf("the last request carries no elision note")
			}
			if budget.EstimateRequest(last) > tt.m.window {
				t.Errorf("last request %d tokens, window %d", budget.EstimateRequest(last), tt.m.window)
			}
			// The full text stays in the log.
			full := false
			for _, ev := range s.MustEvents() {
				if (ev.Type == session.TypeUserMessage || ev.Type == session.TypeToolResult) && len(ev.Data) > size {
					full = true
				}
			}
			if !full {
				t.Error("the log lost the full text")
			}
			// Every model call of the session has its own index, and a
			// restart continues the count from the log.
			want := 0
			tt.m.mu.Lock()
			for _, r := range tt.m.reqs {
				if r.Caller.ScriptKey == "main" {
					if r.Caller.Call != want {
						t.Errorf("call index %d, want %d", r.Caller.Call, want)
					}
					want++
				}
			}
			tt.m.mu.Unlock()
			if err := a.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			tt.m.mu.Lock()
			before := len(tt.m.reqs)
			tt.m.mu.Unlock()
			b := newAgent(t, s, agent.Options{Model: tt.m, Tools: registry(t, bigTool(size)), Budget: tt.budget})
			if res, err := b.Prompt(t.Context(), userMsg("after a restart")); err != nil || res.Reason.Kind != session.TurnEndCompleted {
				t.Fatalf("after restart: %+v %v", res.Reason, err)
			}
			tt.m.mu.Lock()
			defer tt.m.mu.Unlock()
			if tt.m.say {
				// The window the refusal stated is in the log: the restarted
				// agent fits its requests to it and is refused nothing.
				for i, r := range tt.m.reqs[before:] {
					if est := budget.EstimateRequest(r); est > tt.m.window {
						t.Errorf("request %d after the restart: %d tokens, window %d", i, est, tt.m.window)
					}
				}
				if n := len(ofType(s.MustEvents(), session.TypeContextWindow)); n != 1 {
					t.Errorf("%d session/context-window records, want 1", n)
				}
			}
			var calls []int
			for _, r := range tt.m.reqs {
				if r.Caller.ScriptKey == "main" {
					calls = append(calls, r.Caller.Call)
				}
			}
			for i, c := range calls {
				if c != i {
					t.Errorf("call indexes after a restart %v, want 0, 1, 2, ...", calls)
					break
				}
			}
		})
	}
}

// TestNothingFitsEndsTheTurnSayingSo: when even the cut request does not
// fit (the tools alone overflow), the turn ends with CONTEXT_TOO_LONG.
func TestNothingFitsEndsTheTurnSayingSo(t *testing.T) {
	s := newSession(t)
	m := &windowed{window: 10}
	a := newAgent(t, s, agent.Options{Model: m, Tools: registry(t, bigTool(10))})
	res, err := a.Prompt(t.Context(), userMsg(strings.Repeat("x", 3000)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.TurnEndError || res.Reason.Error.Code != agent.CodeContextTooLong || !strings.Contains(res.Reason.Error.Message, "does not fit") {
		t.Fatalf("turn %+v %+v, want CONTEXT_TOO_LONG", res.Reason, res.Reason.Error)
	}
}

func TestWindowFromError(t *testing.T) {
	for msg, want := range map[string]int{
		"This model's maximum context length is 65536 tokens":  65536,
		"prompt is too long: 210000 tokens > 200000 maximum":   200000,
		"input exceeds the context window of 128,000 tokens":   128000,
		"request exceeds the model's context window: too long": 0,
	} {
		if got := compact.WindowFromError(fmt.Errorf("%s", msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}
