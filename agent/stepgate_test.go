package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// The step gate is asked before each step takes the steering messages
// waiting, and once more when a step would end the turn; a steer that
// arrives while the gate holds is delivered with that call (a replay
// pins a settlement notice there).
func TestStepGate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		// steerAt: the gate steers a message when asked for this call
		// the first time (-1: never).
		steerAt   int
		wantCalls []int
		wantUser  []string
		wantSteps int
	}{{
		name:      "asked before every step and at the end",
		script:    "model:\n  main:\n    - tool_calls: [{id: t1, name: echo, arguments: '{\"text\": \"x\"}'}]\n    - text: done\n",
		steerAt:   -1,
		wantCalls: []int{0, 1, 2},
		wantUser:  []string{"start"},
		wantSteps: 2,
	}, {
		name:      "a steer while it holds the end of the turn takes another step",
		script:    "model:\n  main:\n    - text: first\n    - text: second\n",
		steerAt:   1,
		wantCalls: []int{0, 1, 1, 2},
		wantUser:  []string{"start", "notice"},
		wantSteps: 2,
	}, {
		name:      "a steer while it holds a step boundary is delivered in that step",
		script:    "model:\n  main:\n    - tool_calls: [{id: t1, name: echo, arguments: '{\"text\": \"x\"}'}]\n    - text: done\n",
		steerAt:   1,
		wantCalls: []int{0, 1, 2},
		wantUser:  []string{"start", "notice"},
		wantSteps: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			var (
				mu    sync.Mutex
				calls []int
				a     *agent.Agent
			)
			steered := false
			a = newAgent(t, s, agent.Options{
				Tools: registry(t, echoTool()),
				Model: mustScript(t, tc.script),
				StepGate: func(_ context.Context, c model.Caller) {
					mu.Lock()
					calls = append(calls, c.Call)
					steer := c.Call == tc.steerAt && !steered
					steered = steered || steer
					mu.Unlock()
					if c.SessionID != s.ID() || c.ScriptKey != "main" {
						t.Errorf("gate caller %+v", c)
					}
					if steer {
						if _, err := a.Steer(userMsg("notice")); err != nil {
							t.Error(err)
						}
					}
				},
			})
			if _, err := a.Followup(userMsg("start")); err != nil {
				t.Fatal(err)
			}
			if err := a.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			evs := s.MustEvents()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("gate asked for calls %v, want %v", calls, tc.wantCalls)
			}
			if got := userTexts(t, evs); !slices.Equal(got, tc.wantUser) {
				t.Errorf("user messages %q, want %q", got, tc.wantUser)
			}
			if got := len(ofType(evs, session.TypeStepStart)); got != tc.wantSteps {
				t.Errorf("%d steps, want %d", got, tc.wantSteps)
			}
			if got := len(ofType(evs, session.TypeTurnStart)); got != 1 {
				t.Errorf("%d turns, want 1", got)
			}
		})
	}
}
