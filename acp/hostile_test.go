package acp_test

// This file drives the real server with raw JSON lines, the way a broken or
// hostile client would, and checks each answer and that serving continues.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// rawConn is a raw line-level client.
type rawConn struct {
	t   *testing.T
	w   *io.PipeWriter
	r   *bufio.Reader
	ids int
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) request(method string, params string) int {
	c.ids++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.ids, method, params))
	return c.ids
}

type rawMsg struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer reads lines until the response to id, skipping notifications.
func (c *rawConn) answer(id int) rawMsg {
	c.t.Helper()
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("read answer to %d: %v", id, err)
		}
		var m rawMsg
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("agent wrote a non-JSON line %q: %v", line, err)
		}
		if m.ID != nil && *m.ID == id && m.Method == "" {
			return m
		}
	}
}

// serveRaw serves a real app (scripted with script) over pipes to a raw
// JSON-RPC writer, initializes and opens one session. Cleanup closes the
// client side and checks that Serve ends cleanly.
func serveRaw(t *testing.T, script string) (*rawConn, acpsdk.NewSessionResponse, *app.App) {
	t.Helper()
	a, err := app.New(app.Config{DataDir: t.TempDir(), Logger: testLogger(t),
		Testing: &testhooks.Hooks{Model: loadScript(t, script), NoSync: true, PanicOnBug: true}})
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), c2aR, a2cW) }()
	t.Cleanup(func() {
		c2aW.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		a.Close()
		a2cW.Close()
	})
	c := &rawConn{t: t, w: c2aW, r: bufio.NewReaderSize(a2cR, 1<<20)}
	if m := c.answer(c.request("initialize", `{"protocolVersion":1}`)); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	m := c.answer(c.request("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, tempCwd(t))))
	var created acpsdk.NewSessionResponse
	if m.Error != nil || json.Unmarshal(m.Result, &created) != nil {
		t.Fatalf("session/new: %s %+v", m.Result, m.Error)
	}
	return c, created, a
}

func TestHostileInputGetsErrorsAndServingContinues(t *testing.T) {
	c, created, a := serveRaw(t, "model:\n  main:\n    - text: ok\n")
	sid := string(created.SessionId)
	big := strings.Repeat("x", 5<<20)

	tests := []struct {
		name     string
		raw      string // sent as is (no answer expected) when method is ""
		method   string
		params   string
		wantCode int
		contains string
	}{
		{name: "non-JSON line is skipped", raw: "this is not json {"},
		{name: "truncated JSON is skipped", raw: `{"jsonrpc":"2.0","id":99,"method":"initi`},
		{name: "unknown method", method: "session/explode", params: `{}`, wantCode: -32601},
		{name: "unknown extension method", method: "_acp-agent/nope", params: `{}`, wantCode: -32601},
		{name: "wrong-typed param", method: "session/new", params: `{"cwd":42,"mcpServers":[]}`, wantCode: -32602},
		{name: "params of the wrong shape", method: "session/prompt", params: `[1,2,3]`, wantCode: -32602},
		{name: "unknown session id", method: "session/prompt", params: `{"sessionId":"no-such-session","prompt":[{"type":"text","text":"hi"}]}`, wantCode: -32002, contains: "unknown session"},
		{name: "path-like session id on prompt", method: "session/prompt", params: `{"sessionId":"../../etc","prompt":[{"type":"text","text":"hi"}]}`, wantCode: -32602, contains: "invalid session id"},
		{name: "path-like session id on load", method: "session/load", params: `{"sessionId":"../../etc/passwd","cwd":"/tmp","mcpServers":[]}`, wantCode: -32602, contains: "invalid session id"},
		{name: "unknown session id on load", method: "session/load", params: `{"sessionId":"feedface","cwd":"/tmp","mcpServers":[]}`, wantCode: -32002, contains: "unknown session"},
		{name: "5 MB prompt", method: "session/prompt", params: fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}`, sid, big), wantCode: -32602, contains: "too large"},
		{name: "audio prompt", method: "session/prompt", params: fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`, sid), wantCode: -32602, contains: "audio"},
		{name: "relative cwd filter", method: "session/list", params: `{"cwd":"rel"}`, wantCode: -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			if tt.method == "" {
				c.send(tt.raw)
			} else {
				m := c.answer(c.request(tt.method, tt.params))
				if m.Error == nil || m.Error.Code != tt.wantCode || !strings.Contains(m.Error.Message, tt.contains) {
					t.Errorf("answer = %s %+v, want error %d containing %q", m.Result, m.Error, tt.wantCode, tt.contains)
				}
			}
			// The agent keeps serving: the next request is answered.
			if m := c.answer(c.request("session/list", `{}`)); m.Error != nil {
				t.Errorf("next request failed: %+v", m.Error)
			}
		})
	}
	c.t = t
	// Nothing hostile reached the disk: only the one real session exists.
	rows, err := a.Persist.List(context.Background())
	if err != nil || len(rows) != 1 || rows[0].Header.ID != sid {
		t.Errorf("stored sessions = %v, %v", rows, err)
	}
	if err := session.ValidateID(sid); err != nil {
		t.Error(err)
	}
}
