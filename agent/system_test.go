package agent_test

import (
	"context"
	"fmt"
	"testing"

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
