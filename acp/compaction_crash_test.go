package acp_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// hangingSummary is a model whose summary request number hangAt (0-based;
// the earlier ones go to inner) never answers: it streams partial, signals
// reached and waits for its context.
type hangingSummary struct {
	inner   model.Model
	hangAt  int
	partial []string
	reached chan struct{}

	mu        sync.Mutex
	summaries int
}

func (h *hangingSummary) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if !strings.HasSuffix(req.Caller.ScriptKey, agent.CompactScriptSuffix) {
		return h.inner.Stream(ctx, req)
	}
	h.mu.Lock()
	n := h.summaries
	h.summaries++
	h.mu.Unlock()
	if n != h.hangAt {
		return h.inner.Stream(ctx, req)
	}
	return func(yield func(session.Chunk, error) bool) {
		for _, p := range h.partial {
			if !yield(session.Chunk{Type: session.ChunkText, Text: p}, nil) {
				return
			}
		}
		close(h.reached)
		<-ctx.Done()
		yield(session.Chunk{}, context.Cause(ctx))
	}
}

// compactionCalls returns the ids of the "Compact conversation" tool
// calls of ns, in the order they were opened.
func compactionCalls(ns []acpsdk.SessionNotification) []string {
	var out []string
	for _, n := range ns {
		if tc := n.Update.ToolCall; tc != nil && tc.Title == acp.CompactionTitle && !slices.Contains(out, string(tc.ToolCallId)) {
			out = append(out, string(tc.ToolCallId))
		}
	}
	return out
}

// compactionEnded reports whether ns closes tool call id.
func compactionEnded(ns []acpsdk.SessionNotification, id string) bool {
	for _, n := range ns {
		if u := n.Update.ToolCallUpdate; u != nil && string(u.ToolCallId) == id && u.Status != nil &&
			(*u.Status == acpsdk.ToolCallStatusCompleted || *u.Status == acpsdk.ToolCallStatusFailed) {
			return true
		}
	}
	return false
}

// copySession copies session id's file from dir to crashDir: what a kill
// at this point leaves on disk.
func copySession(t *testing.T, dir, crashDir, id string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(crashDir, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crashDir, "sessions", id+".jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

const (
	// crashWindow is the context window of the crashed process: 12,800
	// tokens before automatic compaction. The system prompt and tools
	// take about 5,300, firstPrompt about 1,000 and pastePrompt about
	// 7,800, so the request after pastePrompt crosses the threshold and
	// the one before it does not.
	crashWindow = 16000
	// partialSummary is the text a killed summary had streamed: it must
	// never reach the log or a request.
	partialSummary = "PARTIAL-SUMMARY the person said"
	// restartSummary is the completed summary of a compaction after the
	// restart.
	restartSummary = "RESTART-SUMMARY the person pasted logs"
	// manualSummary is the completed summary of a /compact before the
	// killed compaction.
	manualSummary = "MANUAL-SUMMARY the person said hello"
)

var (
	firstPrompt = "hello, " + strings.Repeat("the details of the plan, ", 120)
	pastePrompt = "look at these logs: " + strings.Repeat("a long paste of the logs, ", 900)
)

const crashScript = `model:
  main:
    - text: first answer (a long answer, the details of the work so far, the details of the work so far, end)
  main/compact:
    - text: "## Intent\n` + manualSummary + `"
`

const restartScript = `model:
  main:
    - text: after the crash
    - text: after the crash
    - text: after the crash
    - text: after the crash
  main/compact:
    - text: "## Intent\n` + restartSummary + `"
    - text: "## Intent\n` + restartSummary + `"
    - text: "## Intent\n` + restartSummary + `"
    - text: "## Intent\n` + restartSummary + `"
`

// TestKilledCompactionReplaysClosed: the session file is copied once the
// client has been shown a compaction whose summary request is under way
// (hanging, or having streamed part of the summary), which is what a kill
// at that point leaves on disk; the compaction is manual (/compact) or
// automatic (a prompt that carries the context past the threshold), and
// may follow a completed one. A fresh process on the copy replays every
// compaction the client was shown, each closed, the killed one failed
// with the reason; the log holds no partial summary, and the next
// request is built from the uncompacted history or a summary completed
// after the restart, never from the partial one.
func TestKilledCompactionReplaysClosed(t *testing.T) {
	tests := []struct {
		name    string
		prompts []string // the last one is under way at the kill
		hangAt  int      // the summary request that hangs
		partial []string // what the hanging summary streams first
		trigger string   // of the killed compaction
		// restartWindow is the context window after the restart: at
		// crashWindow the next prompt compacts again, larger it does not.
		restartWindow int
		wantOutcomes  []string // the session/compaction events after the restart
		viewHas       []string // in the request after the restart
		viewLacks     []string
	}{
		{
			name: "manual, summary hangs", prompts: []string{firstPrompt, "/compact"},
			trigger: session.TriggerManual, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed}, viewHas: []string{"first answer", "the details of the plan"},
		},
		{
			name: "manual, summary streaming", prompts: []string{firstPrompt, "/compact"},
			partial: []string{"## Intent\n", partialSummary}, trigger: session.TriggerManual, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed}, viewHas: []string{"first answer", "the details of the plan"},
		},
		{
			name: "automatic, summary hangs, compacts again", prompts: []string{firstPrompt, pastePrompt},
			trigger: session.TriggerAuto, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed, session.CompactionCompleted},
			viewHas:      []string{restartSummary}, viewLacks: []string{"first answer"},
		},
		{
			name: "automatic, summary streaming, compacts again", prompts: []string{firstPrompt, pastePrompt},
			partial: []string{"## Intent\n", partialSummary}, trigger: session.TriggerAuto, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed, session.CompactionCompleted},
			viewHas:      []string{restartSummary}, viewLacks: []string{"first answer"},
		},
		{
			name: "automatic, summary hangs, uncompacted", prompts: []string{firstPrompt, pastePrompt},
			trigger: session.TriggerAuto, restartWindow: 64000,
			wantOutcomes: []string{session.CompactionFailed},
			viewHas:      []string{"first answer", "the details of the plan", "a long paste of the logs"},
		},
		{
			name: "automatic, summary streaming, uncompacted", prompts: []string{firstPrompt, pastePrompt},
			partial: []string{"## Intent\n", partialSummary}, trigger: session.TriggerAuto, restartWindow: 64000,
			wantOutcomes: []string{session.CompactionFailed},
			viewHas:      []string{"first answer", "the details of the plan", "a long paste of the logs"},
		},
		{
			name: "automatic after a completed /compact, summary streaming", prompts: []string{firstPrompt, "/compact", pastePrompt},
			hangAt: 1, partial: []string{"## Intent\n", partialSummary}, trigger: session.TriggerAuto, restartWindow: 64000,
			wantOutcomes: []string{session.CompactionCompleted, session.CompactionFailed},
			viewHas:      []string{manualSummary, "a long paste of the logs"}, viewLacks: []string{"first answer"},
		},
		{
			name: "automatic after a completed /compact, summary hangs, compacts again", prompts: []string{firstPrompt, "/compact", pastePrompt},
			hangAt: 1, trigger: session.TriggerAuto, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionCompleted, session.CompactionFailed, session.CompactionCompleted},
			viewHas:      []string{restartSummary}, viewLacks: []string{"first answer", manualSummary},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			dir, crashDir, cwd := t.TempDir(), t.TempDir(), tempCwd(t)
			m := &hangingSummary{inner: loadScript(t, crashScript), hangAt: tt.hangAt, partial: tt.partial, reached: make(chan struct{})}
			e := startHooks(t, dir, &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true}, crashWindow)
			e.initialize(ctx)
			id := e.newSession(ctx, cwd)
			last := len(tt.prompts) - 1
			for _, p := range tt.prompts[:last] {
				if _, err := e.prompt(ctx, id, p); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := e.prompt(ctx, id, tt.prompts[last])
				done <- err
			}()
			select {
			case <-m.reached:
			case <-ctx.Done():
				t.Fatal("the summary was never requested")
			}
			if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool { return len(compactionCalls(ns)) == tt.hangAt+1 }); err != nil {
				t.Fatalf("the compaction was never shown: %v", err)
			}
			// The kill.
			shown := e.rec.snapshot(id)
			copySession(t, dir, crashDir, id)
			calls := compactionCalls(shown)
			killed := calls[len(calls)-1]
			if compactionEnded(shown, killed) {
				t.Fatalf("compaction %s was closed before the kill:\n%s", killed, strings.Join(transcript(shown), "\n"))
			}
			if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("%q after cancel: %v", tt.prompts[last][:min(20, len(tt.prompts[last]))], err)
			}
			e.stop()

			rec := &reqLog{inner: loadScript(t, restartScript)}
			second := startHooks(t, crashDir, &testhooks.Hooks{Model: rec, NoSync: true, PanicOnBug: true}, tt.restartWindow)
			second.initialize(ctx)
			if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatalf("session/load after the crash: %v", err)
			}
			replay := second.rec.snapshot(id)
			if got := compactionCalls(replay); !slices.Equal(got, calls) {
				t.Fatalf("replayed compaction calls = %q, want the ones shown (%q):\n%s", got, calls, strings.Join(transcript(replay), "\n"))
			}
			for _, c := range calls {
				final, statuses := foldCall(t, replay, c)
				var state struct {
					Meta map[string]struct {
						Trigger string `json:"trigger"`
					} `json:"_meta"`
				}
				if err := json.Unmarshal([]byte(final), &state); err != nil {
					t.Fatal(err)
				}
				if c != killed {
					if !slices.Equal(statuses, []string{"in_progress", "completed"}) {
						t.Errorf("replayed compaction %s: statuses %v, want the completed one shown", c, statuses)
					}
					continue
				}
				if !slices.Equal(statuses, []string{"in_progress", "failed"}) || !strings.Contains(final, "interrupted") {
					t.Errorf("replayed compaction: statuses %v, state %s; want closed as failed with the reason", statuses, final)
				}
				if got := state.Meta[acp.MetaContextCompaction].Trigger; got != tt.trigger {
					t.Errorf("replayed compaction trigger = %q, want %q", got, tt.trigger)
				}
			}
			if _, err := second.prompt(ctx, id, "after"); err != nil {
				t.Fatal(err)
			}
			second.stop()
			var turn *model.Request
			for i := range rec.reqs {
				if rec.reqs[i].Caller.ScriptKey == "main" {
					if turn != nil {
						t.Fatalf("%d turn requests after the crash, want 1", len(rec.reqs))
					}
					turn = &rec.reqs[i]
				}
			}
			if turn == nil {
				t.Fatal("no turn request after the crash")
			}
			var text strings.Builder
			for _, m := range turn.Messages {
				text.WriteString(session.JoinText(m.Content, " "))
			}
			view := text.String()
			for _, s := range tt.viewHas {
				if !strings.Contains(view, s) {
					t.Errorf("request after the crash lacks %q: %.300s", s, view)
				}
			}
			for _, s := range append(tt.viewLacks, partialSummary) {
				if strings.Contains(view, s) {
					t.Errorf("request after the crash holds %q: %.300s", s, view)
				}
			}
			after, err := os.ReadFile(filepath.Join(crashDir, "sessions", id+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(after), partialSummary) {
				t.Errorf("the log holds the partial summary %q", partialSummary)
			}
			var outcomes []string
			for _, line := range strings.Split(strings.TrimSpace(string(after)), "\n") {
				var ev session.Event
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
				if ev.Type == session.TypeCompaction {
					d, _ := session.DecodeData[session.CompactionData](ev)
					outcomes = append(outcomes, d.Outcome)
				}
			}
			if !slices.Equal(outcomes, tt.wantOutcomes) {
				t.Errorf("compactions after the restart = %v, want %v", outcomes, tt.wantOutcomes)
			}
		})
	}
}
