package agent_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// durableLog is a fake agent.Journal: SyncTo(seq) makes events up to seq
// durable; before, when set, can fail it.
type durableLog struct {
	s      *session.Session
	mu     sync.Mutex
	at     int // events durable
	fail   error
	before func()
	syncs  int // SyncTo calls
	shown  []int64
}

func (d *durableLog) SyncTo(_ context.Context, id string, seq int64) error {
	if id != d.s.ID() {
		return errors.New("wrong session " + id)
	}
	if d.before != nil {
		d.before()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncs++
	if d.fail != nil {
		return d.fail
	}
	d.at = max(d.at, int(seq)+1)
	return nil
}

func (d *durableLog) Shown(_ context.Context, _ string, seq int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shown = append(d.shown, seq)
	return nil
}

func (d *durableLog) durable() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at
}

// TestToolCallIsDurableBeforeExecute: when a tool runs, its tool/call
// event and the assistant message that asked for it are already durable.
func TestToolCallIsDurableBeforeExecute(t *testing.T) {
	s := newSession(t)
	d := &durableLog{s: s}
	var seen []int // durable event count when each call executed
	var calls []int64
	probe := funcTool{
		spec: model.ToolSpec{Name: "echo", Parameters: []byte(echoSchema)},
		fn: func(_ context.Context, inv tool.Invocation) (tool.Result, error) {
			seen = append(seen, d.durable())
			evs := s.MustEvents()
			calls = append(calls, ofType(evs, session.TypeToolCall)[len(calls)].Seq)
			return tool.TextResult("ok", nil), nil
		},
	}
	a := newAgent(t, s, agent.Options{
		Model: mustScript(t, `model:
  main:
    - text: "two calls"
      tool_calls:
        - {id: c1, name: echo, arguments: '{"text": "a"}'}
        - {id: c2, name: echo, arguments: '{"text": "b"}'}
    - text: DONE
`), Tools: registry(t, probe), Journal: d,
	})
	if _, err := a.Prompt(t.Context(), userMsg("go")); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("tool ran %d times, want 2", len(seen))
	}
	for i := range seen {
		if int64(seen[i]) <= calls[i] {
			t.Errorf("call %d ran with %d events durable; its tool/call is seq %d", i+1, seen[i], calls[i])
		}
	}
	if !slices.Equal(d.shown, calls) {
		t.Errorf("calls shown before running: %v, want %v", d.shown, calls)
	}
}

// TestFailedWriteAheadCheckpointSkipsTool: if the call cannot be made
// durable the tool never runs; the call gets TOOL_NOT_STARTED and the turn
// ends with CHECKPOINT_FAILED.
func TestFailedWriteAheadCheckpointSkipsTool(t *testing.T) {
	s := newSession(t)
	d := &durableLog{s: s}
	ran := false
	probe := funcTool{
		spec: model.ToolSpec{Name: "echo", Parameters: []byte(echoSchema)},
		fn: func(context.Context, tool.Invocation) (tool.Result, error) {
			ran = true
			return tool.TextResult("ok", nil), nil
		},
	}
	d.before = func() {
		// The request checkpoint passes; the one after tool/call fails.
		if n := len(ofType(s.MustEvents(), session.TypeToolCall)); n > 0 {
			d.mu.Lock()
			d.fail = errors.New("disk gone")
			d.mu.Unlock()
		}
	}
	a := newAgent(t, s, agent.Options{
		Model: mustScript(t, `model:
  main:
    - tool_calls: [{id: c1, name: echo, arguments: '{"text": "a"}'}]
`), Tools: registry(t, probe), Journal: d,
	})
	res, err := a.Prompt(t.Context(), userMsg("go"))
	if err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("tool ran although its call was not durable")
	}
	if res.Reason.Kind != session.TurnEndError || res.Reason.Error == nil || res.Reason.Error.Code != agent.CodeCheckpointFailed {
		t.Errorf("turn end = %+v, want error %s", res.Reason, agent.CodeCheckpointFailed)
	}
	results := ofType(s.MustEvents(), session.TypeToolResult)
	if len(results) != 1 {
		t.Fatalf("%d tool results, want 1", len(results))
	}
	r := decode[session.ToolResultData](t, results[0])
	if r.Error == nil || r.Error.Code != tool.CodeToolNotStarted || !r.Message.Content[0].IsError {
		t.Errorf("tool result = %+v, want %s", r, tool.CodeToolNotStarted)
	}
	if got := types(s.MustEvents()); !slices.Contains(got, session.TypeStepEnd) || got[len(got)-1] != session.TypeTurnEnd {
		t.Errorf("log does not close the step and turn: %q", got)
	}
}
