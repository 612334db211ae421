package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// shownTap records every byte the agent writes to the client once the
// write has returned: over an io.Pipe a write returns only when the
// client has read all of it, so what the tap holds has reached the client.
// (A tee on the client's read side raced: the pipe's write returns as soon
// as the bytes are copied into the reader's buffer, before such a tee has
// recorded them, so a probe could miss an update that had been shown.)
type shownTap struct {
	w  io.Writer
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *shownTap) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.mu.Lock()
	t.b.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

func (t *shownTap) contains(s string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Contains(t.b.Bytes(), []byte(s))
}

// probeTool reports, when it runs, whether its own tool_call update had
// already reached the client.
type probeTool struct {
	wire *shownTap
	seen chan bool
}

func (p probeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "probe", Description: "probe the wire", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (p probeTool) Execute(_ context.Context, inv tool.Invocation) (tool.Result, error) {
	p.seen <- p.wire.contains(`"sessionUpdate":"tool_call","status":"in_progress","title":"probe","toolCallId":"` + inv.CallID + `"`)
	return tool.TextResult("ok", nil), nil
}

// TestToolCallOnWireBeforeExecute: a tool runs only once the client has
// its tool_call update (so a permission request it sends follows the call
// it is about), and the update went out only once the call was durable.
func TestToolCallOnWireBeforeExecute(t *testing.T) {
	dir := t.TempDir()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	wire := &shownTap{w: a2cW}
	probe := probeTool{wire: wire, seen: make(chan bool, 4)}
	a, err := app.New(app.Config{
		DataDir: dir,
		Tools:   []tool.Tool{probe},
		Version: "test",
		Logger:  testLogger(t),
		Testing: &testhooks.Hooks{PanicOnBug: true, Model: loadScript(t, `
model:
  main:
    - tool_calls:
        - {id: call-a, name: probe, arguments: '{}'}
        - {id: call-b, name: probe, arguments: '{}'}
    - text: "Done."
`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), c2aR, wire) }()
	cs := acpsdk.NewClientSideConnection(newRecorder(), c2aW, a2cR)
	defer func() {
		c2aW.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		a2cW.Close()
	}()
	ctx := ctxFor(t)
	if _, err := cs.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: ns.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("probe twice")}}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if !<-probe.seen {
			t.Errorf("call %d ran before its tool_call update reached the client", i+1)
		}
	}
	// Durable too: the stored log holds both calls (NoSync is off here).
	if d := a.Persist.Durable(string(ns.SessionId)); d == 0 {
		t.Errorf("durable watermark is 0 after two tool calls")
	}
}
