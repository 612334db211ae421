package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/acpschema"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

const childrenUsageScript = `model:
  main:
    - tool_calls:
        - {id: c1, name: subagent, arguments: '{"description": "Helper", "prompt": "help", "run_in_background": false}'}
      usage: {input: 1000, output: 100}
    - text: all done
      usage: {input: 2000, output: 200, cached: 500}
  Helper:
    - text: helped
      usage: {input: 30000, output: 3000}
`

// TestUsageUpdateCountsSubagents: the parent's usage_update after its
// last response costs what the parent and its subagent spent, at the
// user settings' price override (not the built-in table), breaks the
// figures down in _meta, and is a valid session/update frame.
func TestUsageUpdateCountsSubagents(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	user := filepath.Join(dir, "settings.json")
	writeFile(t, user, `{"context": {"window": 100000}, "prices": {"*": {"input": 2, "cachedInput": 1, "output": 10}}}`)
	a, err := app.New(app.Config{
		DataDir: filepath.Join(dir, "data"), Version: "test", Logger: testLogger(t), SettingsFile: user,
		Testing: &testhooks.Hooks{Model: loadScript(t, childrenUsageScript), NoSync: true, PanicOnBug: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, dir: dir, app: a, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	e.cs = acpsdk.NewClientSideConnection(e.rec, c2aW, a2cR)
	t.Cleanup(e.stop)
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	var last *acpsdk.SessionNotification
	for _, n := range e.rec.snapshot(id) {
		if n.Update.UsageUpdate != nil {
			last = &n
		}
	}
	if last == nil {
		t.Fatal("no usage_update")
	}
	u := last.Update.UsageUpdate
	own := (1000*2 + 100*10 + (2000-500)*2 + 500*1 + 200*10) / 1e6
	child := (30000*2 + 3000*10) / 1e6
	if u.Cost == nil || u.Cost.Currency != "USD" || math.Abs(u.Cost.Amount-(own+child)) > 1e-12 {
		t.Fatalf("cost %+v, want the session's %v and its subagent's %v at the override prices", u.Cost, own, child)
	}
	if u.Used != 2200 || u.Size != 100000 {
		t.Errorf("used %d of %d, want the parent's own context 2200 of 100000", u.Used, u.Size)
	}
	meta, _ := json.Marshal(u.Meta[acp.MetaUsage])
	var bd struct {
		Session, Subagents struct {
			Input     int     `json:"inputTokens"`
			Output    int     `json:"outputTokens"`
			Responses int     `json:"responses"`
			Cost      float64 `json:"costUsd"`
		}
	}
	if err := json.Unmarshal(meta, &bd); err != nil {
		t.Fatal(err)
	}
	if bd.Session.Input != 3000 || bd.Session.Responses != 2 || bd.Subagents.Input != 30000 || bd.Subagents.Output != 3000 ||
		math.Abs(bd.Subagents.Cost-child) > 1e-12 {
		t.Errorf("_meta %s", meta)
	}
	acpschema.Check(t, "SessionNotification", last)

	// session/load in a new process replays the log: the usage it ends
	// with is the one the live session showed last (the children's
	// figures come from the parent's own log).
	e.stop()
	b, err := app.New(app.Config{
		DataDir: filepath.Join(dir, "data"), Version: "test", Logger: testLogger(t), SettingsFile: user,
		Testing: &testhooks.Hooks{Model: loadScript(t, childrenUsageScript), NoSync: true, PanicOnBug: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW = io.Pipe()
	a2cR, a2cW = io.Pipe()
	second := &env{t: t, dir: dir, app: b, rec: newRecorder(), c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { second.done <- b.Serve(context.Background(), c2aR, a2cW) }()
	second.cs = acpsdk.NewClientSideConnection(second.rec, c2aW, a2cR)
	t.Cleanup(second.stop)
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	ru := usages(second.rec.snapshot(id))
	if len(ru) != 1 {
		t.Fatalf("replayed usage updates %+v", ru)
	}
	want, _ := json.Marshal(u)
	got, _ := json.Marshal(ru[0])
	if string(got) != string(want) {
		t.Errorf("replayed usage %s, live %s", got, want)
	}
}
