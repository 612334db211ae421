package subagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

func digestEvent(t testing.TB, typ string, data any) agent.Update {
	t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return agent.Update{Event: &session.Event{Type: typ, Data: raw}}
}

func callEvent(t testing.TB, id, name, args string) agent.Update {
	return digestEvent(t, session.TypeToolCall, session.ToolCallData{Turn: 1, CallID: id, Name: name, Arguments: args})
}

func resultEvent(t testing.TB, id string, failed bool) agent.Update {
	d := session.ToolResultData{Turn: 1, Message: session.Message{Role: session.RoleUser, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: id}}}}
	if failed {
		d.Error = &session.ErrorInfo{Code: "X", Message: "boom"}
	}
	return digestEvent(t, session.TypeToolResult, d)
}

func replyEvent(t testing.TB, text string, in, out int) agent.Update {
	return digestEvent(t, session.TypeAssistantMessage, session.AssistantMessageData{Turn: 1,
		Message: session.Message{Role: session.RoleAssistant, Content: []session.Block{session.Text(text)}},
		Usage:   &session.Usage{InputTokens: in, OutputTokens: out}})
}

func TestDigestRendersFoldsAndCaps(t *testing.T) {
	wide := strings.Repeat("界", 200) // 3 bytes a rune, longer than a line
	tests := []struct {
		name    string
		updates func(t *testing.T) []agent.Update
		stop    string
		wt      *WorktreeOutcome
		want    string // exact, when set
		check   func(t *testing.T, got string)
	}{
		{
			name: "a few calls with their status, the last text line and tokens",
			updates: func(t *testing.T) []agent.Update {
				return []agent.Update{
					digestEvent(t, session.TypeTurnStart, session.TurnData{Turn: 2}),
					callEvent(t, "a", "read", `{}`), resultEvent(t, "a", false),
					callEvent(t, "b", "bash", `{}`), resultEvent(t, "b", true),
					callEvent(t, "c", "edit", `{}`),
					replyEvent(t, "first line\n\nthe last line  ", 1200, 34),
				}
			},
			stop: driver.StopCompleted,
			want: "turn 2 · 1,234 tokens\nother · read · completed\nother · bash · failed\nother · edit · in progress\n> the last line\noutcome: completed",
		},
		{
			name: "older calls fold into a count",
			updates: func(t *testing.T) []agent.Update {
				var us []agent.Update
				for i := range 20 {
					us = append(us, callEvent(t, fmt.Sprint(i), fmt.Sprintf("t%d", i), `{}`))
				}
				return us
			},
			stop: driver.StopAborted,
			check: func(t *testing.T, got string) {
				if !strings.Contains(got, "\n… 12 earlier calls\nother · t12 · in progress") || strings.Contains(got, "t11 ") {
					t.Errorf("fold: %q", got)
				}
				if !strings.HasSuffix(got, "outcome: cancelled") {
					t.Errorf("outcome: %q", got)
				}
			},
		},
		{
			name: "wide lines are cut and the whole stays under the cap",
			updates: func(t *testing.T) []agent.Update {
				var us []agent.Update
				for i := range 30 {
					us = append(us, callEvent(t, fmt.Sprint(i), wide, `{}`))
				}
				return append(us, replyEvent(t, wide, 1, 1))
			},
			stop: driver.StopError,
			check: func(t *testing.T, got string) {
				if len(got) > DigestMaxBytes || !utf8.ValidString(got) {
					t.Fatalf("digest is %d bytes (cap %d), valid UTF-8 %v", len(got), DigestMaxBytes, utf8.ValidString(got))
				}
				if !strings.Contains(got, "earlier calls") || !strings.HasSuffix(got, "outcome: failed") {
					t.Errorf("digest: %q", got)
				}
			},
		},
		{
			name:    "a kept worktree is named relative to its repository",
			updates: func(t *testing.T) []agent.Update { return nil },
			stop:    driver.StopCompleted,
			wt: &WorktreeOutcome{WorktreeRecord: WorktreeRecord{Repo: "/r", Path: "/r/.acp-agent/worktrees/c1", Branch: "acp-agent/c1"},
				Kept: true, Changes: worktree.Changes{Changed: true, Summary: "1 file changed, 2 insertions(+)"}},
			check: func(t *testing.T, got string) {
				if !strings.Contains(got, "\nworktree kept at .acp-agent/worktrees/c1\non branch acp-agent/c1: ") {
					t.Errorf("worktree: %q", got)
				}
			},
		},
		{
			name:    "a removed worktree says so",
			updates: func(t *testing.T) []agent.Update { return nil },
			stop:    driver.StopCompleted,
			wt:      &WorktreeOutcome{WorktreeRecord: WorktreeRecord{Repo: "/r", Path: "/r/w"}},
			want:    "starting\noutcome: completed\nworktree removed (no changes)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newDigestReporter(DigestOptions{Sync: true}, false, nil, nil)
			for _, u := range tt.updates(t) {
				r.observe(nil, u)
			}
			got := r.finish(tt.stop, tt.wt)
			if tt.want != "" && got != tt.want {
				t.Errorf("digest =\n%s\nwant\n%s", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

// countingReport counts the updates a reporter sends and keeps the last.
type countingReport struct {
	mu      sync.Mutex
	n       int
	longest int
	last    tool.Progress
}

func (c *countingReport) report(p tool.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.longest = max(c.longest, len(p.Text))
	c.last = p
}

// manualTicks is a throttle driven by hand: each send is one period.
func manualTicks() (chan time.Time, func() (<-chan time.Time, func())) {
	ch := make(chan time.Time)
	return ch, func() (<-chan time.Time, func()) { return ch, func() {} }
}

// thousandCalls feeds a child's 1,000 tool calls to a reporter, ticking
// the throttle every tickEvery calls, and returns the ticks sent.
func thousandCalls(t testing.TB, r *digestReporter, ticks chan time.Time, tickEvery int) int {
	sent := 0
	for i := range 1000 {
		id := fmt.Sprint(i)
		r.observe(nil, callEvent(t, id, "read", `{}`))
		r.observe(nil, resultEvent(t, id, false))
		if (i+1)%tickEvery == 0 {
			ticks <- time.Time{}
			sent++
		}
	}
	return sent
}

func TestDigestThrottleSendsAtMostOneUpdateATickAndTheLastState(t *testing.T) {
	tests := []struct {
		name      string
		oneShot   bool
		tickEvery int
	}{
		{"background, a tick every 10 calls", false, 10},
		{"background, a tick every 250 calls", false, 250},
		{"one-shot (its first state goes at once)", true, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticks, tickFn := manualTicks()
			var c countingReport
			r := newDigestReporter(DigestOptions{Ticks: tickFn}, tt.oneShot, map[string]any{"k": "v"}, c.report)
			sent := thousandCalls(t, r, ticks, tt.tickEvery)
			text := r.finish(driver.StopCompleted, nil)
			r.sendFinal(text, driver.StopCompleted)
			c.mu.Lock()
			defer c.mu.Unlock()
			limit := sent + 1 // one a tick, plus the final state
			if tt.oneShot {
				limit++ // and the first
			}
			// A tick finding nothing new sends nothing, so fewer is fine.
			if c.n > limit || c.n < 1 {
				t.Errorf("%d updates for %d ticks (want 1 to %d)", c.n, sent, limit)
			}
			if c.longest > DigestMaxBytes {
				t.Errorf("an update of %d bytes (cap %d)", c.longest, DigestMaxBytes)
			}
			if c.last.Status != "completed" || c.last.Text != text || !strings.Contains(text, "… 992 earlier calls") {
				t.Errorf("last update = %+v", c.last)
			}
			if c.last.Meta["k"] != "v" {
				t.Errorf("meta lost: %+v", c.last.Meta)
			}
		})
	}
}

func TestDigestReporterStopsItsTicker(t *testing.T) {
	// No tick ever comes: stop must still end the goroutine (goleak in
	// TestMain checks nothing is left), and changes after it are ignored.
	var c countingReport
	r := newDigestReporter(DigestOptions{Every: time.Hour}, false, nil, c.report)
	r.observe(nil, callEvent(t, "a", "read", `{}`))
	r.stop()
	r.stop()
	r.observe(nil, callEvent(t, "b", "read", `{}`))
	r.flush()
	if c.n != 0 {
		t.Errorf("%d updates after stop", c.n)
	}
}

// BenchmarkDigestThousandCalls measures a child making 1,000 tool calls
// with the throttle ticking every 50 calls: updates/op is what the
// parent's connection carries (at most one a tick plus the final state).
func BenchmarkDigestThousandCalls(b *testing.B) {
	var updates, bytes int
	for b.Loop() {
		ticks, tickFn := manualTicks()
		var c countingReport
		r := newDigestReporter(DigestOptions{Ticks: tickFn}, false, nil, c.report)
		sent := thousandCalls(b, r, ticks, 50)
		r.sendFinal(r.finish(driver.StopCompleted, nil), driver.StopCompleted)
		if c.n > sent+1 || c.longest > DigestMaxBytes {
			b.Fatalf("%d updates for %d ticks, longest %d bytes", c.n, sent, c.longest)
		}
		updates, bytes = c.n, c.longest
	}
	b.ReportMetric(float64(updates), "updates/op")
	b.ReportMetric(float64(bytes), "max-bytes")
}

// TestDelegationStopCompletedIsTheDriversStop: the ACP side reads a
// settled notice's stop reason through delegation.StopCompleted (it does
// not import driver); the two names must stay one value.
func TestDelegationStopCompletedIsTheDriversStop(t *testing.T) {
	if delegation.StopCompleted != driver.StopCompleted {
		t.Fatalf("delegation.StopCompleted = %q, driver.StopCompleted = %q", delegation.StopCompleted, driver.StopCompleted)
	}
	for d, v := range map[string]string{
		delegation.StopAborted: driver.StopAborted, delegation.StopError: driver.StopError,
		delegation.StopMaxTokens: driver.StopMaxTokens, delegation.StopRefusal: driver.StopRefusal,
		delegation.StopMaxTurns: driver.StopMaxTurns,
	} {
		if d != v {
			t.Errorf("delegation's stop %q, driver's %q", d, v)
		}
	}
}

// TestDigestFinalSaysHowTheChildEnded: a failed or cancelled child's final
// digest closes its call as failed and says failed or cancelled; a
// completed one closes it completed.
func TestDigestFinalSaysHowTheChildEnded(t *testing.T) {
	tests := []struct {
		stop, status, outcome string
	}{
		{driver.StopCompleted, "completed", "outcome: completed"},
		{driver.StopError, "failed", "outcome: failed"},
		{driver.StopAborted, "failed", "outcome: cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			var c countingReport
			r := newDigestReporter(DigestOptions{Every: time.Hour}, false, nil, c.report)
			r.observe(nil, callEvent(t, "a", "read", `{}`))
			text := r.finish(tt.stop, nil)
			r.sendFinal(text, tt.stop)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.last.Status != tt.status || !strings.HasSuffix(c.last.Text, tt.outcome) {
				t.Errorf("final = %q %q, want %q ending %q", c.last.Status, c.last.Text, tt.status, tt.outcome)
			}
		})
	}
}

// TestDigestUnchangedIsNotResentOnATick: a tick that finds the digest as
// it was last sent sends nothing.
func TestDigestUnchangedIsNotResentOnATick(t *testing.T) {
	ticks, tickFn := manualTicks()
	var c countingReport
	r := newDigestReporter(DigestOptions{Ticks: tickFn}, false, nil, c.report)
	r.observe(nil, callEvent(t, "a", "read", `{}`))
	// The ticker goroutine receives one tick at a time: once the third
	// is taken, the first two were handled.
	for range 3 {
		ticks <- time.Time{}
	}
	r.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n != 1 {
		t.Errorf("%d updates for one change and three ticks, want 1", c.n)
	}
}

// TestDigestHeldFinalIsNotDropped: a background child that settles before
// its delegation call returned keeps its final digest until the call names
// where later updates go, then sends it there, once.
func TestDigestHeldFinalIsNotDropped(t *testing.T) {
	var early, later countingReport
	r := newDigestReporter(DigestOptions{Every: time.Hour}, false, map[string]any{"k": "v"}, early.report)
	r.observe(nil, callEvent(t, "a", "read", `{}`))
	r.holdFinal()
	text := r.finish(driver.StopError, nil)
	r.sendFinal(text, driver.StopError)
	early.mu.Lock()
	if early.n != 0 {
		t.Errorf("the held final digest went to the call's own progress (%d updates)", early.n)
	}
	early.mu.Unlock()
	r.setReport(later.report)
	r.setReport(later.report)
	later.mu.Lock()
	defer later.mu.Unlock()
	if later.n != 1 || later.last.Text != text || later.last.Status != "failed" || later.last.Meta["k"] != "v" {
		t.Errorf("after setReport: %d updates, last %+v; want the final digest once, failed", later.n, later.last)
	}
}
