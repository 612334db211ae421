package acp_test

import (
	"context"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// startWindow is start with a context window configured.
func startWindow(t *testing.T, dir string, m model.Model, window int) *env {
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
    - text: first answer
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
