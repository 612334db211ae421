package acp_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// hangingSummary is a model whose compaction summaries never answer: the
// summary request signals reached and waits for its context.
type hangingSummary struct {
	inner   model.Model
	reached chan struct{}
}

func (h *hangingSummary) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if !strings.HasSuffix(req.Caller.ScriptKey, agent.CompactScriptSuffix) {
		return h.inner.Stream(ctx, req)
	}
	return func(yield func(session.Chunk, error) bool) {
		close(h.reached)
		<-ctx.Done()
		yield(session.Chunk{}, context.Cause(ctx))
	}
}

// compactionCall returns the id of the "Compact conversation" tool call
// of ns, or "".
func compactionCall(ns []acpsdk.SessionNotification) string {
	for _, n := range ns {
		if tc := n.Update.ToolCall; tc != nil && tc.Title == acp.CompactionTitle {
			return string(tc.ToolCallId)
		}
	}
	return ""
}

// TestKilledCompactionReplaysClosed: the session file is copied once the
// client has been shown a compaction whose summary hangs, which is what a
// kill at that point leaves on disk. A fresh process on the copy replays
// the compaction closed and failed with the reason, and the model's view
// is the uncompacted history.
func TestKilledCompactionReplaysClosed(t *testing.T) {
	ctx := ctxFor(t)
	dir, crashDir, cwd := t.TempDir(), t.TempDir(), tempCwd(t)
	m := &hangingSummary{inner: loadScript(t, usageScript), reached: make(chan struct{})}
	e := startHooks(t, dir, &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true}, 16000)
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "hello"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.prompt(ctx, id, "/compact")
		done <- err
	}()
	select {
	case <-m.reached:
	case <-ctx.Done():
		t.Fatal("the summary was never requested")
	}
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool { return compactionCall(ns) != "" }); err != nil {
		t.Fatalf("the compaction was never shown: %v", err)
	}
	callID := compactionCall(e.rec.snapshot(id))
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
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("/compact after cancel: %v", err)
	}
	e.stop()

	rec := &reqLog{inner: loadScript(t, "model:\n  main:\n    - text: x\n    - text: after the crash\n")}
	second := startHooks(t, crashDir, &testhooks.Hooks{Model: rec, NoSync: true, PanicOnBug: true}, 16000)
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load after the crash: %v", err)
	}
	replay := second.rec.snapshot(id)
	if got := compactionCall(replay); got != callID {
		t.Fatalf("replayed compaction call = %q, want the one shown (%q):\n%s", got, callID, strings.Join(transcript(replay), "\n"))
	}
	final, statuses := foldCall(t, replay, callID)
	if !slices.Equal(statuses, []string{"in_progress", "failed"}) || !strings.Contains(final, "interrupted") {
		t.Errorf("replayed compaction: statuses %v, state %s; want closed as failed with the reason", statuses, final)
	}
	if _, err := second.prompt(ctx, id, "after"); err != nil {
		t.Fatal(err)
	}
	second.stop()
	if len(rec.reqs) != 1 {
		t.Fatalf("requests after the crash = %d, want 1", len(rec.reqs))
	}
	var text strings.Builder
	for _, m := range rec.reqs[0].Messages {
		text.WriteString(session.JoinText(m.Content, " "))
	}
	if !strings.Contains(text.String(), "first answer") {
		t.Errorf("request after the crash = %q, want the uncompacted history", text.String())
	}
	after, err := os.ReadFile(filepath.Join(crashDir, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
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
	if !slices.Equal(outcomes, []string{session.CompactionFailed}) {
		t.Errorf("compactions after the restart = %v, want one failed", outcomes)
	}
}
