package acp_test

// Protocol edges driven by an independent JSON-RPC client
// (sourcegraph/jsonrpc2) over the real connection: session/resume,
// session/fork, the -32700 reply and additionalDirectories.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// rpcEnv is one agent process (a composition served over io.Pipe) and a
// jsonrpc2 client recording session/update notifications.
type rpcEnv struct {
	t       *testing.T
	app     *app.App
	conn    *jsonrpc2.Conn
	c2aW    *io.PipeWriter
	a2cW    *io.PipeWriter
	done    chan error
	mu      sync.Mutex
	updates []json.RawMessage
	once    sync.Once
}

type pipeRWC struct {
	io.Reader
	io.WriteCloser
}

func startRPC(t *testing.T, dir, script string) *rpcEnv {
	t.Helper()
	a, err := app.New(app.Config{
		DataDir: dir, Version: "test", Logger: testLogger(t),
		Testing: &testhooks.Hooks{Model: loadScript(t, script), NoSync: true, PanicOnBug: true},
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &rpcEnv{t: t, app: a, c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	// The handler runs on jsonrpc2's read loop, so every notification sent
	// before a response has been recorded when the call returns.
	h := jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if req.Method == "session/update" && req.Params != nil {
			e.mu.Lock()
			e.updates = append(e.updates, *req.Params)
			e.mu.Unlock()
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "not supported by the test client"}
	})
	e.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipeRWC{a2cR, c2aW}), h)
	t.Cleanup(e.stop)
	return e
}

func (e *rpcEnv) stop() {
	e.once.Do(func() {
		e.c2aW.Close()
		if err := <-e.done; err != nil {
			e.t.Errorf("Serve: %v", err)
		}
		if err := e.app.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
		e.a2cW.Close()
		e.conn.Close()
	})
}

func (e *rpcEnv) call(ctx context.Context, method string, params, result any) error {
	return e.conn.Call(ctx, method, params, result)
}

func (e *rpcEnv) mustCall(ctx context.Context, method string, params, result any) {
	e.t.Helper()
	if err := e.call(ctx, method, params, result); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
}

// kinds returns the sessionUpdate kinds received for session id (the
// available_commands_update every attached session gets is left out).
func (e *rpcEnv) kinds(id string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, raw := range e.updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind    string `json:"sessionUpdate"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		_ = json.Unmarshal(raw, &n)
		if n.SessionID != id || n.Update.Kind == "available_commands_update" {
			continue
		}
		k := n.Update.Kind
		if k == "session_info_update" {
			continue // titles are not what these tests are about
		}
		if n.Update.Content.Text != "" {
			// Merge a run of chunks: how text is split is the model's business.
			if len(out) > 0 && strings.HasPrefix(out[len(out)-1], k+" ") {
				out[len(out)-1] += n.Update.Content.Text
				continue
			}
			k += " " + n.Update.Content.Text
		}
		out = append(out, k)
	}
	return out
}

func (e *rpcEnv) resetUpdates() {
	e.mu.Lock()
	e.updates = nil
	e.mu.Unlock()
}

func (e *rpcEnv) initialize(ctx context.Context) map[string]any {
	var r map[string]any
	e.mustCall(ctx, "initialize", map[string]any{"protocolVersion": 1}, &r)
	return r
}

func (e *rpcEnv) prompt(ctx context.Context, id, text string) {
	e.t.Helper()
	var r struct {
		StopReason string `json:"stopReason"`
	}
	e.mustCall(ctx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &r)
	if r.StopReason != "end_turn" {
		e.t.Fatalf("stopReason = %q", r.StopReason)
	}
}

func rpcCode(err error) int64 {
	if je, ok := err.(*jsonrpc2.Error); ok {
		return je.Code
	}
	return 0
}

const oneReply = "model:\n  main:\n    - text: \"first answer\"\n"

// firstSession runs one completed turn in a fresh data directory and
// returns the directory, the cwd and the session id.
func firstSession(t *testing.T, ctx context.Context) (dir, cwd, id string) {
	dir, cwd = t.TempDir(), tempCwd(t)
	a := startRPC(t, dir, oneReply)
	a.initialize(ctx)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	a.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &r)
	a.prompt(ctx, r.SessionID, "first question")
	a.stop()
	return dir, cwd, r.SessionID
}

func TestResumeReattachesWithoutReplay(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)

	// The scripted model indexes replies by the session's history.
	b := startRPC(t, dir, "model:\n  main:\n    - text: \"first answer\"\n    - text: \"second answer\"\n")
	caps := b.initialize(ctx)["agentCapabilities"].(map[string]any)["sessionCapabilities"].(map[string]any)
	if caps["resume"] == nil || caps["fork"] == nil || caps["additionalDirectories"] == nil {
		t.Errorf("sessionCapabilities = %v, want resume, fork and additionalDirectories", caps)
	}
	var res map[string]any
	b.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &res)
	if res["modes"] == nil {
		t.Errorf("resume result = %v, want modes", res)
	}
	if got := b.kinds(id); len(got) != 0 {
		t.Errorf("resume sent updates %q, want none (no replay)", got)
	}
	// Resuming again is harmless and still replays nothing.
	b.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &res)
	b.prompt(ctx, id, "second question")
	if got, want := b.kinds(id), []string{"agent_message_chunk second answer"}; !slices.Equal(got, want) {
		t.Errorf("updates after resume = %q, want %q", got, want)
	}

	err := b.call(ctx, "session/resume", map[string]any{"sessionId": "no-such-session", "cwd": cwd}, &res)
	if rpcCode(err) != -32002 || !strings.Contains(err.Error(), "unknown session") {
		t.Errorf("resume of an unknown session = %v, want -32002 unknown session", err)
	}
	err = b.call(ctx, "session/resume", map[string]any{"sessionId": id}, &res)
	if rpcCode(err) != -32602 {
		t.Errorf("resume without cwd = %v, want -32602", err)
	}
}

func TestForkCopiesCompletedTurnsIntoANewListedSession(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)

	b := startRPC(t, dir, "model:\n  main:\n    - text: \"fork answer\"\n")
	b.initialize(ctx)
	var fr struct {
		SessionID string         `json:"sessionId"`
		Modes     map[string]any `json:"modes"`
	}
	b.mustCall(ctx, "session/fork", map[string]any{"sessionId": id, "cwd": cwd}, &fr)
	if fr.SessionID == "" || fr.SessionID == id || fr.Modes == nil {
		t.Fatalf("fork result = %+v", fr)
	}
	if got := b.kinds(fr.SessionID); len(got) != 0 {
		t.Errorf("fork sent updates %q, want none", got)
	}
	// Durable before the answer: its log is on disk with the source's turn.
	raw, err := os.ReadFile(filepath.Join(dir, "sessions", fr.SessionID+".jsonl"))
	if err != nil {
		t.Fatalf("fork log: %v", err)
	}
	if !strings.Contains(string(raw), "first question") || !strings.Contains(string(raw), `"parentSession":"`+id+`"`) {
		t.Errorf("fork log lacks the source's turn or its lineage:\n%s", raw)
	}
	// Listed as a top-level session.
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	b.mustCall(ctx, "session/list", map[string]any{}, &list)
	var ids []string
	for _, s := range list.Sessions {
		ids = append(ids, s.SessionID)
	}
	if !slices.Contains(ids, fr.SessionID) || !slices.Contains(ids, id) {
		t.Errorf("session/list = %v, want the source and the fork", ids)
	}
	// The fork continues on its own; the source is untouched.
	b.prompt(ctx, fr.SessionID, "fork question")
	if got, want := b.kinds(fr.SessionID), []string{"agent_message_chunk fork answer"}; !slices.Equal(got, want) {
		t.Errorf("fork turn = %q, want %q", got, want)
	}
	b.stop()

	c := startRPC(t, dir, "model: {}\n")
	c.initialize(ctx)
	var lr map[string]any
	c.mustCall(ctx, "session/load", map[string]any{"sessionId": fr.SessionID, "cwd": cwd, "mcpServers": []any{}}, &lr)
	want := []string{"user_message_chunk first question", "agent_message_chunk first answer", "user_message_chunk fork question", "agent_message_chunk fork answer"}
	if got := c.kinds(fr.SessionID); !slices.Equal(got, want) {
		t.Errorf("fork replay = %q, want %q", got, want)
	}
	c.resetUpdates()
	c.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &lr)
	if got := c.kinds(id); !slices.Equal(got, want[:2]) {
		t.Errorf("source replay after fork = %q, want %q", got, want[:2])
	}

	var res map[string]any
	err = c.call(ctx, "session/fork", map[string]any{"sessionId": "nope", "cwd": cwd}, &res)
	if rpcCode(err) != -32002 || !strings.Contains(err.Error(), "unknown session") {
		t.Errorf("fork of an unknown session = %v, want -32002 unknown session", err)
	}
}

func TestAdditionalDirectoriesThatAreNotDirectoriesAreRefused(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)
	b := startRPC(t, dir, oneReply)
	b.initialize(ctx)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		method string
		params map[string]any
		says   string
	}{
		{"session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{missing}}, missing + " is not a directory"},
		{"session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{"rel/dir"}}, "not an absolute path"},
		{"session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{missing}}, missing},
		{"session/resume", map[string]any{"sessionId": id, "cwd": cwd, "additionalDirectories": []string{missing}}, missing},
		{"session/fork", map[string]any{"sessionId": id, "cwd": cwd, "additionalDirectories": []string{t.TempDir()}}, "not supported on session/fork"},
	} {
		var res map[string]any
		err := b.call(ctx, tt.method, tt.params, &res)
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s with additionalDirectories = %v, want -32602 saying %q", tt.method, err, tt.says)
		}
	}
	// An empty list is the same as none.
	var r map[string]any
	b.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{}}, &r)
}

func TestUnparsableLinesGetParseErrorWithNullID(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(app.Config{DataDir: dir, Version: "test", Logger: testLogger(t), Testing: &testhooks.Hooks{NoSync: true, PanicOnBug: true}})
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- a.Serve(context.Background(), c2aR, a2cW) }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(a2cR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(c2aW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		l, ok := <-lines
		if !ok {
			t.Fatal("agent closed its output")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("reply %q is not JSON", l)
		}
		return m
	}
	tests := []struct {
		line string
		code float64
	}{
		{`this is not json`, -32700},
		{`{"jsonrpc":"2.0","id":7,"method":"initialize",`, -32700},
		{`{"jsonrpc":"2.0","id":8,"error":5}`, -32600},
	}
	for _, tt := range tests {
		send(tt.line)
		m := next()
		id, hasID := m["id"]
		e, _ := m["error"].(map[string]any)
		if !hasID || id != nil || e == nil || e["code"] != tt.code || m["jsonrpc"] != "2.0" {
			t.Errorf("reply to %q = %v, want error %v with id null", tt.line, m, tt.code)
		}
	}
	// Blank lines are skipped, and the connection still serves.
	send("")
	send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}`)
	if m := next(); m["id"] != float64(9) || m["result"] == nil {
		t.Errorf("initialize after bad lines = %v", m)
	}
	c2aW.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Error(err)
	}
	a2cW.Close()
	for range lines {
	}
}

func TestLockedSessionMessageSaysWhatToDo(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)
	a := startRPC(t, dir, oneReply)
	a.initialize(ctx)
	var r map[string]any
	a.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &r)

	b := startRPC(t, dir, oneReply)
	b.initialize(ctx)
	for _, method := range []string{"session/load", "session/resume"} {
		err := b.call(ctx, method, map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &r)
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "is open in another acp-agent process") {
			t.Errorf("%s of a session held elsewhere = %v, want -32602 saying where it is open", method, err)
		}
		for _, prefix := range []string{"acp:", "persistence:"} {
			if err != nil && strings.Contains(err.Error(), prefix) {
				t.Errorf("%s: message carries the package prefix %q: %v", method, prefix, err)
			}
		}
	}
}
