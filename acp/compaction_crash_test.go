package acp_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
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

// shownCompaction is one compaction as a client was shown it.
type shownCompaction struct {
	id       string
	statuses []string // in the order shown
	state    string   // what the client holds at the end (error, summary)
	trigger  string   // _meta.contextCompaction.trigger; compaction_update has none
}

// crashClient is an editor attached to one agent process: the SDK client,
// shown compactions as "Compact conversation" tool calls, or a JSON-RPC
// client that announces clientCapabilities.session.compaction and is
// shown compaction_update.
type crashClient interface {
	newSession(ctx context.Context, cwd string) string
	prompt(ctx context.Context, id, text string) error
	cancel(ctx context.Context, id string) error
	load(ctx context.Context, id, cwd string) error
	// compactions returns what session id was shown of its compactions.
	compactions(id string) []shownCompaction
	// await returns once session id has been shown n compactions.
	await(ctx context.Context, id string, n int) error
	stop()
}

// toolCallClient is the SDK client (env).
type toolCallClient struct {
	t *testing.T
	e *env
}

func startToolCallClient(t *testing.T, ctx context.Context, dir string, m model.Model, window int) crashClient {
	e := startHooks(t, dir, &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true}, window)
	e.initialize(ctx)
	return &toolCallClient{t: t, e: e}
}

func (c *toolCallClient) newSession(ctx context.Context, cwd string) string {
	return c.e.newSession(ctx, cwd)
}

func (c *toolCallClient) prompt(ctx context.Context, id, text string) error {
	_, err := c.e.prompt(ctx, id, text)
	return err
}

func (c *toolCallClient) cancel(ctx context.Context, id string) error {
	return c.e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)})
}

func (c *toolCallClient) load(ctx context.Context, id, cwd string) error {
	_, err := c.e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	return err
}

func (c *toolCallClient) compactions(id string) []shownCompaction {
	ns := c.e.rec.snapshot(id)
	var out []shownCompaction
	for _, call := range compactionCalls(ns) {
		final, statuses := foldCall(c.t, ns, call)
		var state struct {
			Meta map[string]struct {
				Trigger string `json:"trigger"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal([]byte(final), &state); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, shownCompaction{id: call, statuses: statuses, state: final, trigger: state.Meta[acp.MetaContextCompaction].Trigger})
	}
	return out
}

func (c *toolCallClient) await(ctx context.Context, id string, n int) error {
	return c.e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		ns = slices.DeleteFunc(slices.Clone(ns), func(x acpsdk.SessionNotification) bool { return string(x.SessionId) != id })
		return len(compactionCalls(ns)) >= n
	})
}

func (c *toolCallClient) stop() { c.e.stop() }

// compactionUpdateClient is a jsonrpc2 client that announces
// clientCapabilities.session.compaction.
type compactionUpdateClient struct {
	rpc     *rpcEnv
	changed chan struct{} // closed and replaced at each update
}

func startCompactionUpdateClient(t *testing.T, ctx context.Context, dir string, m model.Model, window int) crashClient {
	t.Helper()
	a, err := app.New(app.Config{
		DataDir: dir, Version: "test", Logger: testLogger(t), ContextWindow: window,
		Testing: &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true},
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	c := &compactionUpdateClient{
		rpc:     &rpcEnv{t: t, app: a, c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)},
		changed: make(chan struct{}),
	}
	e := c.rpc
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	// The handler runs on jsonrpc2's read loop: an update is recorded
	// once the client has read it.
	h := jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == "session/update" && req.Params != nil {
			e.mu.Lock()
			e.updates = append(e.updates, *req.Params)
			close(c.changed)
			c.changed = make(chan struct{})
			e.mu.Unlock()
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "not supported by the test client"}
	})
	e.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipeRWC{a2cR, c2aW}), h)
	t.Cleanup(e.stop)
	var r map[string]any
	e.mustCall(ctx, "initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"session": map[string]any{"compaction": map[string]any{}}}}, &r)
	return c
}

func (c *compactionUpdateClient) newSession(ctx context.Context, cwd string) string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	c.rpc.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &r)
	return r.SessionID
}

func (c *compactionUpdateClient) prompt(ctx context.Context, id, text string) error {
	var r map[string]any
	return c.rpc.call(ctx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &r)
}

func (c *compactionUpdateClient) cancel(ctx context.Context, id string) error {
	return c.rpc.conn.Notify(ctx, "session/cancel", map[string]any{"sessionId": id})
}

func (c *compactionUpdateClient) load(ctx context.Context, id, cwd string) error {
	var r map[string]any
	return c.rpc.call(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &r)
}

func (c *compactionUpdateClient) compactions(id string) []shownCompaction {
	c.rpc.mu.Lock()
	defer c.rpc.mu.Unlock()
	var out []shownCompaction
	for _, raw := range c.rpc.updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind    string `json:"sessionUpdate"`
				ID      string `json:"compactionId"`
				Status  string `json:"status"`
				Error   string `json:"error"`
				Summary []struct {
					Text string `json:"text"`
				} `json:"summary"`
			} `json:"update"`
		}
		if err := json.Unmarshal(raw, &n); err != nil || n.SessionID != id || n.Update.Kind != "compaction_update" {
			continue
		}
		u := n.Update
		i := slices.IndexFunc(out, func(s shownCompaction) bool { return s.id == u.ID })
		if i < 0 {
			out = append(out, shownCompaction{id: u.ID})
			i = len(out) - 1
		}
		out[i].statuses = append(out[i].statuses, u.Status)
		if u.Error != "" {
			out[i].state = u.Error
		}
		for _, b := range u.Summary {
			out[i].state += b.Text
		}
	}
	return out
}

func (c *compactionUpdateClient) await(ctx context.Context, id string, n int) error {
	for {
		c.rpc.mu.Lock()
		ch := c.changed
		c.rpc.mu.Unlock()
		if len(c.compactions(id)) >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *compactionUpdateClient) stop() { c.rpc.stop() }

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

// overflowScript refuses the second turn's request as too long for the
// context: the agent compacts (trigger overflow) before sending it again.
const overflowScript = `model:
  main:
    - text: first answer (a long answer, the details of the work so far, the details of the work so far, end)
    - {error: "prompt is too long for the context window", context_length_exceeded: true}
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
// at that point leaves on disk; the compaction is manual (/compact),
// automatic (a prompt that carries the context past the threshold) or
// after a context_length_exceeded refusal (overflow), and may follow a
// completed one. A fresh process on the copy replays every compaction
// the client was shown, each closed, the killed one failed with the
// reason; the log holds no partial summary, and the next request is built
// from the uncompacted history or a summary completed after the restart,
// never from the partial one. Every case runs for a client shown
// "Compact conversation" tool calls and for one shown compaction_update.
func TestKilledCompactionReplaysClosed(t *testing.T) {
	tests := []struct {
		name    string
		script  string   // of the crashed process; "" is crashScript
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
			name: "overflow, summary hangs", script: overflowScript, prompts: []string{firstPrompt, "go on"},
			trigger: session.TriggerOverflow, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed}, viewHas: []string{"first answer", "the details of the plan", "go on"},
		},
		{
			name: "overflow, summary streaming", script: overflowScript, prompts: []string{firstPrompt, "go on"},
			partial: []string{"## Intent\n", partialSummary}, trigger: session.TriggerOverflow, restartWindow: crashWindow,
			wantOutcomes: []string{session.CompactionFailed}, viewHas: []string{"first answer", "the details of the plan", "go on"},
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
	clients := []struct {
		name  string
		start func(t *testing.T, ctx context.Context, dir string, m model.Model, window int) crashClient
	}{
		{"tool call", startToolCallClient},
		{"compaction_update", startCompactionUpdateClient},
	}
	for _, cl := range clients {
		for _, tt := range tests {
			t.Run(cl.name+"/"+tt.name, func(t *testing.T) {
				ctx := ctxFor(t)
				dir, crashDir, cwd := t.TempDir(), t.TempDir(), tempCwd(t)
				script := cmp.Or(tt.script, crashScript)
				m := &hangingSummary{inner: loadScript(t, script), hangAt: tt.hangAt, partial: tt.partial, reached: make(chan struct{})}
				c := cl.start(t, ctx, dir, m, crashWindow)
				id := c.newSession(ctx, cwd)
				last := len(tt.prompts) - 1
				for _, p := range tt.prompts[:last] {
					if err := c.prompt(ctx, id, p); err != nil {
						t.Fatal(err)
					}
				}
				done := make(chan error, 1)
				go func() { done <- c.prompt(ctx, id, tt.prompts[last]) }()
				select {
				case <-m.reached:
				case <-ctx.Done():
					t.Fatal("the summary was never requested")
				}
				if err := c.await(ctx, id, tt.hangAt+1); err != nil {
					t.Fatalf("the compaction was never shown: %v", err)
				}
				// The kill.
				shown := c.compactions(id)
				copySession(t, dir, crashDir, id)
				killed := shown[len(shown)-1]
				if !slices.Equal(killed.statuses, []string{"in_progress"}) {
					t.Fatalf("the compaction under way was shown %v before the kill, want only in_progress", killed.statuses)
				}
				if err := c.cancel(ctx, id); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("the last prompt after cancel: %v", err)
				}
				c.stop()

				rec := &reqLog{inner: loadScript(t, restartScript)}
				second := cl.start(t, ctx, crashDir, rec, tt.restartWindow)
				if err := second.load(ctx, id, cwd); err != nil {
					t.Fatalf("session/load after the crash: %v", err)
				}
				replay := second.compactions(id)
				ids := func(cs []shownCompaction) []string {
					var out []string
					for _, c := range cs {
						out = append(out, c.id)
					}
					return out
				}
				if !slices.Equal(ids(replay), ids(shown)) {
					t.Fatalf("replayed compactions = %q, want the ones shown (%q)", ids(replay), ids(shown))
				}
				for _, r := range replay[:len(replay)-1] {
					if !slices.Equal(r.statuses, []string{"in_progress", "completed"}) {
						t.Errorf("replayed compaction %s: statuses %v, want the completed one shown", r.id, r.statuses)
					}
				}
				r := replay[len(replay)-1]
				if !slices.Equal(r.statuses, []string{"in_progress", "failed"}) || !strings.Contains(r.state, "interrupted") {
					t.Errorf("replayed compaction: statuses %v, state %s; want closed as failed with the reason", r.statuses, r.state)
				}
				if r.trigger != "" && r.trigger != tt.trigger {
					t.Errorf("replayed compaction trigger = %q, want %q", r.trigger, tt.trigger)
				}
				if err := second.prompt(ctx, id, "after"); err != nil {
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
}
