package acp_test

import (
	"context"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// startWindow is start with a context window configured.
func startWindow(t *testing.T, dir string, m model.Model, window int) *env {
	t.Helper()
	return startHooks(t, dir, &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true}, window)
}

// startHooks is startWindow with the test hooks given.
func startHooks(t *testing.T, dir string, hooks *testhooks.Hooks, window int) *env {
	t.Helper()
	a, err := app.New(app.Config{
		DataDir: dir, Version: "test", Logger: testLogger(t), ContextWindow: window,
		Testing: hooks,
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, dir: dir, app: a, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	e.cs = acpsdk.NewClientSideConnection(e.rec, c2aW, a2cR)
	t.Cleanup(e.stop)
	return e
}

func usages(ns []acpsdk.SessionNotification) []acpsdk.SessionUsageUpdate {
	var out []acpsdk.SessionUsageUpdate
	for _, n := range ns {
		if u := n.Update.UsageUpdate; u != nil {
			out = append(out, *u)
		}
	}
	return out
}

const usageScript = `model:
  main:
    - text: first answer (a long answer, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, the details of the work so far, end)
      usage: {input: 6000, output: 20}
    - text: second answer
      usage: {input: 6500, output: 30}
  main/compact:
    - text: "## Intent\nthe person said hello twice"
`

// TestUsageUpdateLiveAndOnLoad: each model response is followed by a
// usage_update with the reported tokens against the window; /compact shows
// the "Compact conversation" think call with _meta.contextCompaction and
// lowers the usage; session/load replays the compaction where it happened
// and ends with the same usage the live session showed last.
func TestUsageUpdateLiveAndOnLoad(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := startWindow(t, dir, loadScript(t, usageScript), 16000)
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	for _, p := range []string{"hello", "hello again"} {
		if _, err := e.prompt(ctx, id, p); err != nil {
			t.Fatal(err)
		}
	}
	us := usages(e.rec.snapshot(id))
	if len(us) != 2 || us[0].Used != 6020 || us[1].Used != 6530 || us[0].Size != 16000 || us[0].Cost != nil {
		t.Fatalf("usage updates = %+v, want used 6020 then 6530 of 16000 and no cost (unknown price)", us)
	}

	e.rec.reset()
	resp, err := e.prompt(ctx, id, "/compact keep names")
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("/compact: %v %v", resp, err)
	}
	live := e.rec.snapshot(id)
	lines := transcript(live)
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, `title="Compact conversation"`) || !strings.Contains(joined, "status=completed") || !strings.Contains(joined, "Conversation compacted") {
		t.Fatalf("compaction updates:\n%s", joined)
	}
	var meta map[string]any
	for _, n := range live {
		if u := n.Update.ToolCallUpdate; u != nil && u.Meta != nil {
			meta, _ = u.Meta[acp.MetaContextCompaction].(map[string]any)
		}
	}
	if meta == nil || meta["trigger"] != "manual" || meta["version"] == nil || meta["preTokens"] == nil || meta["error"] != nil {
		t.Errorf("contextCompaction meta = %v", meta)
	}
	after := usages(live)
	if len(after) != 1 || after[0].Used >= 6530 {
		t.Fatalf("usage after compaction = %+v, want one lower figure", after)
	}
	e.stop()

	second := startWindow(t, dir, loadScript(t, usageScript), 16000)
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay := second.rec.snapshot(id)
	rl := strings.Join(transcript(replay), "\n")
	// The whole history is replayed, with the compaction after it.
	iFirst, iComp := strings.Index(rl, "first answer"), strings.Index(rl, `title="Compact conversation"`)
	if iFirst < 0 || iComp < iFirst {
		t.Errorf("replay does not show the history then the compaction:\n%s", rl)
	}
	ru := usages(replay)
	if len(ru) != 1 || ru[0].Used != after[0].Used || ru[0].Size != after[0].Size {
		t.Errorf("replayed usage = %+v, want %+v", ru, after)
	}
}

// reqLog records the requests a model sees.
type reqLog struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []model.Request
}

func (r *reqLog) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Stream(ctx, req)
}

// TestCompactionDurableBeforeUse: at the fault point right after the
// compaction event (before any request uses it) the session file is
// copied, which is what a kill at that point leaves on disk. A fresh
// process on the copy neither loses the compaction nor writes a second
// one: its next request is built from the recorded summary, and it never
// asks for a summary again (its script has no main/compact replies).
func TestCompactionDurableBeforeUse(t *testing.T) {
	ctx := ctxFor(t)
	dir, crashDir, cwd := t.TempDir(), t.TempDir(), tempCwd(t)
	var copied atomic.Int32
	hooks := &testhooks.Hooks{Model: loadScript(t, usageScript), NoSync: true, PanicOnBug: true,
		AfterCompaction: func(id string, _ int64) {
			src := filepath.Join(dir, "sessions", id+".jsonl")
			b, err := os.ReadFile(src)
			if err == nil {
				err = os.MkdirAll(filepath.Join(crashDir, "sessions"), 0o700)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(crashDir, "sessions", id+".jsonl"), b, 0o600)
			}
			if err != nil {
				t.Errorf("copy at the fault point: %v", err)
			}
			copied.Add(1)
		}}
	e := startHooks(t, dir, hooks, 16000)
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "/compact"); err != nil {
		t.Fatal(err)
	}
	e.stop()
	if copied.Load() != 1 {
		t.Fatalf("fault point reached %d times, want 1", copied.Load())
	}

	rec := &reqLog{inner: loadScript(t, "model:\n  main:\n    - text: x\n    - text: after the crash\n")}
	second := startHooks(t, crashDir, &testhooks.Hooks{Model: rec, NoSync: true, PanicOnBug: true}, 16000)
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load after the crash: %v", err)
	}
	if _, err := second.prompt(ctx, id, "after"); err != nil {
		t.Fatal(err)
	}
	second.stop()
	if len(rec.reqs) != 1 || rec.reqs[0].Caller.ScriptKey != "main" {
		t.Fatalf("requests after the crash = %+v, want one turn request and no summary request", rec.reqs)
	}
	var text strings.Builder
	for _, m := range rec.reqs[0].Messages {
		text.WriteString(session.JoinText(m.Content, " "))
	}
	if got := text.String(); !strings.Contains(got, "the person said hello twice") || strings.Contains(got, "first answer") {
		t.Errorf("request after the crash = %q, want the recorded summary instead of the old turns", got)
	}
	b, err := os.ReadFile(filepath.Join(crashDir, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"type":"`+session.TypeCompaction+`"`); n != 1 {
		t.Errorf("%d compaction events after the restart, want exactly 1", n)
	}
}
