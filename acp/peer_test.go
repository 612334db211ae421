package acp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// TestServeEndsWhenTheClientStopsReading: a client that closes its end of
// our output but keeps our stdin open (the official TypeScript SDK's
// connection close does this) can receive nothing more. Serve must not
// wait for an EOF that may never come: the first failed write ends it,
// cleanly, as stdin EOF does.
func TestServeEndsWhenTheClientStopsReading(t *testing.T) {
	a, err := app.New(app.Config{DataDir: t.TempDir(), Logger: testLogger(t),
		Testing: &testhooks.Hooks{Model: loadScript(t, echoScript), NoSync: true, PanicOnBug: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	defer c2aW.Close()
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), c2aR, a2cW) }()
	c := &rawConn{t: t, w: c2aW, r: bufio.NewReaderSize(a2cR, 1<<20)}
	if m := c.answer(c.request("initialize", `{"protocolVersion":1}`)); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	a2cR.Close() // the client stops reading; stdin stays open
	c.request("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, tempCwd(t)))
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-ctxFor(t).Done():
		t.Fatal("Serve did not return after its output failed")
	}
}
