package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestAgent_SystemPromptRecordedOnce: the assembled prompt is recorded
// once, before the first request; every request of the session, and of a
// new agent on the same log (load, cold resume), uses the recorded text
// without assembling again; a fork records its own.
func TestAgent_SystemPromptRecordedOnce(t *testing.T) {
	st := session.NewStore(&session.DeterministicSources{})
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	script := "model:\n  main:\n    - text: one\n    - text: two\n    - text: three\n    - text: four\n"
	rec := &recorder{inner: mustScript(t, script)}
	calls := 0
	assemble := func(gen string) func(context.Context, []model.ToolSpec) string {
		return func(context.Context, []model.ToolSpec) string {
			calls++
			return fmt.Sprintf("prompt %s #%d", gen, calls)
		}
	}

	a := agent.New(s, agent.Options{Model: rec, SystemPrompt: assemble("first")})
	for _, text := range []string{"a", "b"} {
		if _, err := a.Prompt(t.Context(), userMsg(text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A new agent on the same log: the recorded prompt wins.
	b := newAgent(t, s, agent.Options{Model: rec, SystemPrompt: assemble("second")})
	if _, err := b.Prompt(t.Context(), userMsg("c")); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("assembled %d times, want 1", calls)
	}
	recorded := ofType(s.MustEvents(), session.TypeSystemPrompt)
	if len(recorded) != 1 || decode[session.SystemPromptData](t, recorded[0]).Text != "prompt first #1" {
		t.Fatalf("recorded prompts %v", recorded)
	}
	for i, req := range rec.requests() {
		if req.System != "prompt first #1" {
			t.Errorf("request %d system %q", i, req.System)
		}
	}
	// The record precedes the first model output.
	ts := types(s.MustEvents())
	first := -1
	for i, typ := range ts {
		if typ == session.TypeSystemPrompt {
			first = i
		}
		if typ == session.TypeAssistantChunk && first < 0 {
			t.Fatalf("assistant output before the system prompt record: %v", ts)
		}
	}

	// A fork's seed holds the parent's prompt; the child records its own.
	child, err := st.Fork(s.ID(), session.ForkOptions{Boundary: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := newAgent(t, child, agent.Options{Model: rec, SystemPrompt: assemble("child")})
	if _, err := c.Prompt(t.Context(), userMsg("d")); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if got := reqs[len(reqs)-1].System; got != "prompt child #2" {
		t.Fatalf("fork system %q, want its own", got)
	}
}

// TestAgent_StaticSystemNotRecorded: a fixed Options.System is used as is
// and leaves the log unchanged.
func TestAgent_StaticSystemNotRecorded(t *testing.T) {
	s := newSession(t)
	rec := &recorder{inner: mustScript(t, "model:\n  main:\n    - text: hi\n")}
	a := newAgent(t, s, agent.Options{Model: rec, System: "fixed"})
	if _, err := a.Prompt(t.Context(), userMsg("x")); err != nil {
		t.Fatal(err)
	}
	if n := len(ofType(s.MustEvents(), session.TypeSystemPrompt)); n != 0 {
		t.Fatalf("%d system prompt records", n)
	}
	if got := rec.requests()[0].System; got != "fixed" {
		t.Fatalf("system %q", got)
	}
}

// TestAgent_PrepareSystem: PrepareSystem starts when the agent is created
// (before any prompt) only when the log records no prompt yet, and Close
// cancels it and waits for it to return.
func TestAgent_PrepareSystem(t *testing.T) {
	cases := []struct {
		name        string
		recorded    bool // the log already holds a system prompt
		wantStarted bool
	}{
		{name: "new session: prepared at creation", wantStarted: true},
		{name: "recorded prompt: nothing to prepare", recorded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			if tc.recorded {
				if _, err := s.Append(session.TypeSystemPrompt, session.SystemPromptData{Text: "recorded"}); err != nil {
					t.Fatal(err)
				}
			}
			started := make(chan struct{})
			var returned atomic.Bool
			prepare := func(ctx context.Context) {
				close(started)
				<-ctx.Done() // a probe that only the agent's Close ends
				returned.Store(true)
			}
			a := agent.New(s, agent.Options{
				SystemPrompt:  func(context.Context, []model.ToolSpec) string { return "assembled" },
				PrepareSystem: prepare,
			})
			select {
			case <-started:
				if !tc.wantStarted {
					t.Fatal("PrepareSystem ran although the prompt is recorded")
				}
			case <-time.After(200 * time.Millisecond):
				if tc.wantStarted {
					t.Fatal("PrepareSystem not started at creation")
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.wantStarted && !returned.Load() {
				t.Fatal("Close returned before PrepareSystem did")
			}
		})
	}
}
