package acp_test

// This file checks the connection lifecycle at its edges: stdin EOF during
// a prompt, a cancel racing its prompt, and lines the SDK never answers.

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// TestStdinEOFDuringPromptSendsFinalUpdatesBeforeResponse: the client
// closes its end of stdin while a prompt runs a tool; the agent cancels the
// prompt, and its closing tool_call_update still precedes the response
// (the client may keep reading stdout after closing stdin).
func TestStdinEOFDuringPromptSendsFinalUpdatesBeforeResponse(t *testing.T) {
	for range 20 {
		ctx := ctxFor(t)
		e := start(t, t.TempDir(), loadScript(t, `
model:
  main:
    - tool_calls:
        - id: call-b
          name: block
          arguments: '{}'
`), blockTool{})
		e.initialize(ctx)
		id := e.newSession(ctx, tempCwd(t))
		type result struct {
			r   acpsdk.PromptResponse
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := e.prompt(ctx, id, "block please")
			done <- result{r, err}
		}()
		if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
			return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool { return n.Update.ToolCall != nil })
		}); err != nil {
			t.Fatal(err)
		}
		e.c2aW.Close() // stdin EOF; stdout is still read
		res := <-done
		if res.err != nil {
			t.Fatalf("prompt: %v", res.err)
		}
		if res.r.StopReason != acpsdk.StopReasonCancelled {
			t.Errorf("stop reason = %q, want cancelled", res.r.StopReason)
		}
		got := transcript(e.rec.snapshot(id))
		if last := got[len(got)-1]; !strings.HasPrefix(last, "tool_call_update call-b status=failed") {
			t.Fatalf("last update before the response = %s, want the tool call closed as failed\nall:\n%s", last, strings.Join(got, "\n"))
		}
		e.stop()
	}
}

// TestCancelRightAfterPromptIsNotLost: a client sends session/prompt and,
// immediately after it, session/cancel (one write). The SDK runs the
// cancel notification and the prompt request on different goroutines, so
// the cancel may be handled before the prompt registered; it must still
// cancel that prompt rather than leave it hanging in the model.
func TestCancelRightAfterPromptIsNotLost(t *testing.T) {
	c, created, _ := serveRaw(t, "model:\n  main:\n"+strings.Repeat("    - text: thinking\n      hang: true\n", 50))
	for i := range 30 {
		c.ids++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, c.ids, created.SessionId, created.SessionId))
		answered := make(chan rawMsg, 1)
		go func(id int) { answered <- c.answer(id) }(c.ids)
		select {
		case m := <-answered:
			var r acpsdk.PromptResponse
			if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || r.StopReason != acpsdk.StopReasonCancelled {
				t.Fatalf("attempt %d: answer %s %+v, want stopReason cancelled", i, m.Result, m.Error)
			}
		case <-time.After(5 * time.Second):
			// Unblock: cancel it now, then stop.
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, created.SessionId))
			<-answered
			t.Fatalf("attempt %d: prompt not answered after session/cancel", i)
		}
	}
}

// TestShutdownAfterLinesTheSDKDoesNotAnswer: lines that look like requests
// but that the SDK treats as notifications (id null), skips (an envelope
// field of the wrong type) or cannot read (longer than its 10 MiB line
// limit, which ends the connection) get no response; the agent must still
// finish its shutdown once the client closes stdin.
func TestShutdownAfterLinesTheSDKDoesNotAnswer(t *testing.T) {
	huge := fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{"cwd":%q}}`, "/"+strings.Repeat("x", 11<<20))
	tests := []struct {
		name, line string
		fatal      bool // the line ends the connection
	}{
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}`, false},
		{"error of the wrong type", `{"jsonrpc":"2.0","id":7,"method":"session/list","params":{},"error":5}`, false},
		{"jsonrpc of the wrong type", `{"jsonrpc":2,"id":8,"method":"session/list","params":{}}`, false},
		{"line over 10 MiB", huge, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			e := start(t, t.TempDir(), nil)
			e.initialize(ctx)
			wrote := make(chan error, 1)
			// The SDK stops reading in the middle of an oversized line.
			go func() { _, err := io.WriteString(e.c2aW, tt.line+"\n"); wrote <- err }()
			if !tt.fatal {
				if err := <-wrote; err != nil {
					t.Fatal(err)
				}
				// A later request is answered, so the line above was read.
				e.initialize(ctx)
			}
			e.c2aW.Close()
			if tt.fatal {
				<-wrote
			}
			select {
			case err := <-e.done:
				e.done <- err // for stop
			case <-time.After(5 * time.Second):
				e.once.Do(func() {}) // stop would block too
				t.Fatal("Serve did not return after stdin EOF")
			}
		})
	}
}
