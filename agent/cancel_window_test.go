package agent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Cancel(keepInbox=true) that lands after a waking send was accepted but
// before the loop goroutine opened the turn for it (the agent already
// reports running) stops that turn: the turn the message would have opened
// ends aborted, and only the items behind it stay parked. Before the fix
// the message was parked and the agent went idle as if nothing had been
// running, so an interrupted continuable child stayed resident forever.
//
// The window is hit deterministically from OnIdle: the loop goroutine is
// between turns there, without the agent's lock.
func TestCancelKeepInboxBeforeTheLoopOpensTheTurn(t *testing.T) {
	const script = "model:\n  main:\n    - text: first done\n    - text: must not run\n    - text: later done\n"
	tests := []struct {
		name       string
		queued     []string // followups accepted before the cancel
		wantParked int
		wantUsers  []string // after a later waking send
	}{
		{"one accepted message", []string{"second"}, 0, []string{"first", "waking"}},
		{"messages behind it stay parked", []string{"second", "third"}, 1, []string{"first", "third", "waking"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			calls := 0
			var a *agent.Agent
			a = newAgent(t, s, agent.Options{Model: mustScript(t, script), OnIdle: func(*agent.Agent) {
				calls++
				if calls != 1 {
					return
				}
				for _, m := range tt.queued {
					if _, err := a.Followup(userMsg(m)); err != nil {
						t.Error(err)
					}
				}
				if a.Status() != agent.StatusRunning {
					t.Errorf("status after accepted followup = %s", a.Status())
				}
				a.Cancel(session.AbortReason{Kind: "user"}, true)
			}})
			if _, err := a.Followup(userMsg("first")); err != nil {
				t.Fatal(err)
			}
			if err := a.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := a.WaitIdle(t.Context()); err != nil {
				t.Fatal(err)
			}
			evs := s.MustEvents()
			var kinds []string
			for _, r := range turnEnds(t, evs) {
				kinds = append(kinds, r.Kind)
				if r.Kind == session.TurnEndAborted && (r.Reason == nil || r.Reason.Kind != "user") {
					t.Errorf("abort cause = %+v", r.Reason)
				}
			}
			if want := []string{"completed", "aborted"}; !slices.Equal(kinds, want) {
				t.Fatalf("turn ends = %q, want %q", kinds, want)
			}
			if got := a.ParkedCount(); got != tt.wantParked {
				t.Errorf("parked = %d, want %d", got, tt.wantParked)
			}
			if a.Status() != agent.StatusIdle {
				t.Errorf("status = %s", a.Status())
			}
			if _, err := a.Followup(userMsg("waking")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if err := a.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if got := userTexts(t, s.MustEvents()); !slices.Equal(got, tt.wantUsers) {
				t.Errorf("user messages = %q, want %q", got, tt.wantUsers)
			}
		})
	}
}
