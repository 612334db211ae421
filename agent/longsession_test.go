package agent_test

import (
	"context"
	"iter"
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestRequestAfterFailedTurnIsWellFormed: a turn whose model call fails
// leaves its user message without a reply; the next request must not
// carry [user, user] but one user message holding both prompts.
func TestRequestAfterFailedTurnIsWellFormed(t *testing.T) {
	s := newSession(t)
	calls := 0
	rec := &recorder{inner: modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
		return func(yield func(session.Chunk, error) bool) {
			calls++
			if calls == 1 {
				yield(session.Chunk{}, errTest)
				return
			}
			if yield(session.Chunk{Type: session.ChunkText, Text: "ok"}, nil) {
				yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishStop}, nil)
			}
		}
	})}
	a := newAgent(t, s, agent.Options{Model: rec, Tools: registry(t)})
	res, err := a.Prompt(t.Context(), userMsg("first"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason.Kind != session.TurnEndError {
		t.Fatalf("first turn ended %+v, want error", res.Reason)
	}
	if _, err := a.Prompt(t.Context(), userMsg("second")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if want := []string{"user"}; !slices.Equal(roles, want) {
		t.Fatalf("roles after a failed turn = %v, want %v", roles, want)
	}
	if got := session.JoinText(msgs[0].Content, "|"); got != "first|second" {
		t.Errorf("merged user message = %q, want both prompts in order", got)
	}
	// The log itself is untouched: two user messages.
	if got := userTexts(t, s.Events()); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("logged user messages = %v", got)
	}
}
