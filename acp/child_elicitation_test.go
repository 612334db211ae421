package acp_test

// This file tests ask_user for subagents over the real connection: a
// background child's question asked while no prompt of its root runs is
// held, asked on the root session at the next prompt (whose model is told
// it is pending), and its answer is the child's tool result; a question
// nobody answers within the deadline is refused, and the listings say so.

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

const childAskScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Asker", "prompt": "Ask which database."}'
    - text: STARTED
    - text: AGAIN
    - text: NOTED
    - text: MORE
  Asker:
    - tool_calls:
        - id: a-1
          name: ask_user
          arguments: '{"question": "Which database should the tests use?", "choices": ["postgres", "sqlite"]}'
    - text: ASKED
`

// childAskEnv starts a client with form elicitation (and no subagents
// capability) whose background child asks once it is released.
type childAskEnv struct {
	*protoEnv
	gate  *gateModel
	fire  chan time.Time
	mu    sync.Mutex
	asked []map[string]any
}

func startChildAsk(t *testing.T, dir string, subagents ...bool) *childAskEnv {
	t.Helper()
	c := &childAskEnv{fire: make(chan time.Time)}
	c.protoEnv = startProto(t, dir, protoOpts{script: childAskScript,
		hooks: func(h *testhooks.Hooks) {
			c.gate = &gateModel{Model: h.Model, key: "Asker", release: make(chan struct{})}
			h.Model = c.gate
			h.QuestionAfter = func(time.Duration) <-chan time.Time { return c.fire }
		},
		answer: func(method string, params json.RawMessage) (any, error) {
			if method != acp.MethodElicitationCreate {
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no"}
			}
			var p map[string]any
			_ = json.Unmarshal(params, &p)
			c.mu.Lock()
			c.asked = append(c.asked, p)
			c.mu.Unlock()
			return map[string]any{"action": "accept", "content": map[string]any{"answer": "sqlite"}}, nil
		}})
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if len(subagents) > 0 && subagents[0] {
		caps["subagents"] = map[string]any{}
	}
	var r map[string]any
	c.mustCall(ctxFor(t), "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps}, &r)
	return c
}

func (c *childAskEnv) questions() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.asked...)
}

// delegate starts the background child and returns its id.
func (c *childAskEnv) delegate(ctx context.Context, t *testing.T, cwd string) (root, child string) {
	t.Helper()
	root = c.newSession(ctx, cwd, nil)
	c.prompt(ctx, root, "delegate")
	entries, err := c.app.Catalog.ListChildren(ctx, root)
	if err != nil || len(entries) != 1 {
		t.Fatalf("children of %s: %v, %v", root, entries, err)
	}
	return root, entries[0].ID
}

func TestChildAskUser_HeldUntilTheNextPrompt(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	e := startChildAsk(t, dir)
	root, child := e.delegate(ctx, t, tempCwd(t))
	close(e.gate.release) // the child asks while no prompt runs
	held := e.app.Server.Questions()
	poll(ctx, t, "the child's question is held", func() bool { return held.Held(root) == 1 })
	if q := e.questions(); len(q) != 0 {
		t.Fatalf("asked between prompts: %v", q)
	}

	e.prompt(ctx, root, "go on")
	qs := e.questions()
	if len(qs) != 1 {
		t.Fatalf("questions at the next prompt: %v", qs)
	}
	q := qs[0]
	meta, _ := q["_meta"].(map[string]any)
	sub, _ := meta[acp.MetaSubagent].(map[string]any)
	if q["sessionId"] != root || q["message"] != "[Asker] Which database should the tests use?" || q["toolCallId"] != nil ||
		sub["childSessionId"] != child || sub["toolCallId"] != "a-1" {
		t.Errorf("the question at the next prompt = %v, want the child's on the root session", q)
	}
	// The root's model was told the question is pending, before the
	// person's message.
	msgs := userMessages(rootEventsOf(t, e.protoEnv, root))
	note, goOn := -1, -1
	for i, m := range msgs {
		switch {
		case note < 0 && strings.HasPrefix(m, session.SourcePlugin+": ") && strings.Contains(m, "Asker ("+child+") asks the user: Which database"):
			note = i
		case m == session.SourceUser+": go on":
			goOn = i
		}
	}
	if note < 0 || goOn < 0 || note > goOn {
		t.Errorf("the root model's messages %q: want the pending note before %q", msgs, "go on")
	}
	// The answer is the child's tool result.
	poll(ctx, t, "the child settles", func() bool { return !e.app.Subagents.Resident(child) })
	raw, err := os.ReadFile(logFile(dir, child))
	if err != nil || !strings.Contains(string(raw), "The person answered: sqlite") {
		t.Errorf("the child's log has not the answer (%v)", err)
	}
}

func TestChildAskUser_RefusedAtTheDeadline(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	e := startChildAsk(t, dir)
	root, child := e.delegate(ctx, t, tempCwd(t))
	close(e.gate.release)
	poll(ctx, t, "the child's question is held", func() bool { return e.app.Server.Questions().Held(root) == 1 })
	close(e.fire)
	poll(ctx, t, "the child settles", func() bool { return !e.app.Subagents.Resident(child) })
	if q := e.questions(); len(q) != 0 {
		t.Errorf("the expired question was asked: %v", q)
	}
	raw, err := os.ReadFile(logFile(dir, child))
	if err != nil || !strings.Contains(string(raw), acp.CodeElicitationRefused) || !strings.Contains(string(raw), "nobody answered it within") {
		t.Errorf("the child's model was not told of the refusal (%v)", err)
	}
	entries, err := e.app.Catalog.ListChildren(ctx, root)
	if err != nil || len(entries) != 1 || entries[0].Question == nil || !strings.HasPrefix(entries[0].Question.String(), "question refused: nobody answered") {
		t.Errorf("the listing of %s: %+v, %v; want its question refused", child, entries, err)
	}
}

// TestChildAskUser_OnItsOwnSession: a client with the subagents
// capability follows the child, so its question is asked at once on the
// child's own session, tied to its call, even while no prompt runs.
func TestChildAskUser_OnItsOwnSession(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	e := startChildAsk(t, dir, true)
	root, child := e.delegate(ctx, t, tempCwd(t))
	close(e.gate.release)
	poll(ctx, t, "the child's question is asked", func() bool { return len(e.questions()) == 1 })
	q := e.questions()[0]
	if q["sessionId"] != child || q["toolCallId"] != "a-1" || q["message"] != "Which database should the tests use?" {
		t.Errorf("question = %v, want it on the child's session", q)
	}
	if n := e.app.Server.Questions().Held(root); n != 0 {
		t.Errorf("%d questions held for a client with the capability", n)
	}
	poll(ctx, t, "the child settles", func() bool { return !e.app.Subagents.Resident(child) })
	if raw, err := os.ReadFile(logFile(dir, child)); err != nil || !strings.Contains(string(raw), "The person answered: sqlite") {
		t.Errorf("the child's log has not the answer (%v)", err)
	}
}

// rootEventsOf is session id's live log.
func rootEventsOf(t *testing.T, e *protoEnv, id string) []session.Event {
	t.Helper()
	s, ok := e.app.Sessions.Get(id)
	if !ok {
		t.Fatalf("session %s not live", id)
	}
	return s.MustEvents()
}
