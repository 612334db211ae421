package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// TestOverflowRecoveryThroughReplayedSSE: the API's "prompt is too long"
// refusal is model.ErrContextLength, so an Anthropic session compacts once
// (the summary is the third request), retries once and completes the turn,
// as the OpenAI-compatible path does; the retried request carries the
// summary instead of the first turn.
func TestOverflowRecoveryThroughReplayedSSE(t *testing.T) {
	text := sse(t, "text.sse")
	r := newReplay(t,
		text, // turn 1
		apiError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
		text, // the summary
		text, // the retry
	)
	m := newModel(t, r, nil)
	s, err := session.NewStore(&session.DeterministicSources{}).Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tool.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(s, agent.Options{Model: m, Tools: reg})
	defer a.Close(context.Background())
	first := "first, a long prompt: " + strings.Repeat("the details of the work so far, ", 10)
	for _, p := range []string{first, "second"} {
		res, err := a.Prompt(t.Context(), session.Message{Content: []session.Block{session.Text(p)}})
		if err != nil || res.Reason.Kind != session.TurnEndCompleted {
			t.Fatalf("turn %q: %+v %v", p[:6], res.Reason, err)
		}
	}
	if r.count() != 4 {
		t.Fatalf("%d requests, want 4 (turn 1, refused, summary, retry)", r.count())
	}
	retry := r.body(t, 3)
	b, _ := jsonString(retry)
	if strings.Contains(b, "the details of the work so far") || !strings.Contains(b, strings.TrimSpace(session.SummaryPrefix[:20])) {
		t.Errorf("retried request does not carry the summary instead of the first turn: %s", b)
	}
}

func TestContextLengthIsTheSharedError(t *testing.T) {
	r := newReplay(t, apiError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
	_, err := collect(newModel(t, r, nil), userReq("hi"))
	if !errors.Is(err, model.ErrContextLength) {
		t.Fatalf("err %v does not wrap model.ErrContextLength", err)
	}
}

// TestClaudeWindowsAndPrices: current Claude models have a built-in window
// and price, dated snapshots find their family, so Anthropic sessions
// compact against the window and show a cost.
func TestClaudeWindowsAndPrices(t *testing.T) {
	for _, tt := range []struct {
		id         string
		input, out float64
	}{
		{"claude-sonnet-4-5", 3, 15},
		{"claude-sonnet-4-5-20250929", 3, 15},
		{"claude-opus-4-1-20250805", 15, 75},
		{"claude-opus-4-5", 5, 25},
		{"claude-haiku-4-5", 1, 5},
		{"claude-3-5-haiku-latest", 0.80, 4},
	} {
		r := model.Route{Provider: Provider, Model: tt.id}
		if w := budget.KnownWindow(r); w != 200_000 {
			t.Errorf("%s window %d, want 200000", tt.id, w)
		}
		p, ok := budget.KnownPrice(r)
		if !ok || p.Input != tt.input || p.Output != tt.out {
			t.Errorf("%s price %+v %v, want %v/%v", tt.id, p, ok, tt.input, tt.out)
		}
	}
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
