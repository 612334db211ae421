package acp_test

// The 2026 protocol additions over the real connection (io.Pipe, an
// independent jsonrpc2 client), every frame in both directions checked
// against the ACP v1 schema (internal/acpschema).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/acpschema"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// frameChecker validates each JSON-RPC line of one direction; requests
// from either side are remembered by id so their responses are checked
// against the method's result shape.
type frameChecker struct {
	mu      sync.Mutex
	pending map[string]string // "c:<id>" client requests, "a:<id>" agent requests → method
	errs    []string
	frames  int
}

func newFrameChecker() *frameChecker { return &frameChecker{pending: map[string]string{}} }

// line checks one line written by side ("c" client, "a" agent).
func (f *frameChecker) line(side string, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames++
	if err := json.Unmarshal(line, &m); err != nil {
		f.errs = append(f.errs, side+": not JSON: "+string(line))
		return
	}
	if m.Method != "" {
		if len(m.ID) > 0 && string(m.ID) != "null" {
			f.pending[side+":"+string(m.ID)] = m.Method
		}
		if strings.HasPrefix(m.Method, "_") {
			return // our own extensions are not in the schema
		}
		if err := acpschema.ValidateMessage(line); err != nil {
			f.errs = append(f.errs, side+": "+err.Error())
		}
		return
	}
	other := "c"
	if side == "c" {
		other = "a"
	}
	method, ok := f.pending[other+":"+string(m.ID)]
	delete(f.pending, other+":"+string(m.ID))
	switch {
	case !ok || strings.HasPrefix(method, "_"):
	case len(m.Error) > 0:
		if err := acpschema.Validate("Error", m.Error); err != nil {
			f.errs = append(f.errs, side+": "+err.Error())
		}
	default:
		if err := acpschema.ValidateResult(method, m.Result); err != nil {
			f.errs = append(f.errs, side+": "+method+" result: "+err.Error())
		}
	}
}

// checkedWriter checks each complete line written through it.
type checkedWriter struct {
	w    io.WriteCloser
	side string
	f    *frameChecker
	buf  []byte
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			break
		}
		c.f.line(c.side, c.buf[:i])
		c.buf = c.buf[i+1:]
	}
	return c.w.Write(p)
}

func (c *checkedWriter) Close() error { return c.w.Close() }

// protoEnv is one agent process whose frames are all checked, with a
// client that records session/update params and answers the agent's
// requests through answer (nil: method not found).
type protoEnv struct {
	*rpcEnv
	frames *frameChecker
}

type protoOpts struct {
	script string
	hooks  func(*testhooks.Hooks)
	config func(*app.Config)
	answer func(method string, params json.RawMessage) (any, error)
}

func startProto(t *testing.T, dir string, o protoOpts) *protoEnv {
	t.Helper()
	fc := newFrameChecker()
	t.Cleanup(func() {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		for _, e := range fc.errs {
			t.Error("frame does not match the ACP schema: " + e)
		}
	})
	h := &testhooks.Hooks{Model: loadScript(t, o.script), NoSync: true, PanicOnBug: true}
	if o.hooks != nil {
		o.hooks(h)
	}
	cfg := app.Config{DataDir: dir, Version: "test", Logger: testLogger(t), Testing: h}
	if o.config != nil {
		o.config(&cfg)
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &rpcEnv{t: t, app: a, c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, &checkedWriter{w: a2cW, side: "a", f: fc}) }()
	handler := jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		if o.answer != nil && req.Params != nil {
			return o.answer(req.Method, *req.Params)
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "not supported by the test client"}
	})
	record := func(req *jsonrpc2.Request) bool {
		if req.Method != "session/update" || req.Params == nil {
			return false
		}
		e.mu.Lock()
		e.updates = append(e.updates, *req.Params)
		e.mu.Unlock()
		return true
	}
	e.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipeRWC{a2cR, &checkedWriter{w: c2aW, side: "c", f: fc}}), orderedHandler{record: record, rest: handler})
	t.Cleanup(e.stop)
	return &protoEnv{rpcEnv: e, frames: fc}
}

func (e *protoEnv) newSession(ctx context.Context, cwd string, extra map[string]any) string {
	e.t.Helper()
	params := map[string]any{"cwd": cwd, "mcpServers": []any{}}
	for k, v := range extra {
		params[k] = v
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	e.mustCall(ctx, "session/new", params, &r)
	return r.SessionID
}

func (e *protoEnv) listed(ctx context.Context, meta map[string]any) []string {
	e.t.Helper()
	params := map[string]any{}
	if meta != nil {
		params["_meta"] = meta
	}
	var r struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	e.mustCall(ctx, "session/list", params, &r)
	var out []string
	for _, s := range r.Sessions {
		out = append(out, s.SessionID)
	}
	return out
}

func logFile(dir, id string) string { return filepath.Join(dir, "sessions", id+".jsonl") }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestInitializeAdvertisesSessionDelete(t *testing.T) {
	ctx := ctxFor(t)
	e := startProto(t, t.TempDir(), protoOpts{script: oneReply})
	r := e.initialize(ctx)
	caps, _ := r["agentCapabilities"].(map[string]any)
	sc, _ := caps["sessionCapabilities"].(map[string]any)
	if _, ok := sc["delete"].(map[string]any); !ok {
		t.Errorf("sessionCapabilities = %v, want delete: {}", sc)
	}
	// What the SDK advertised is still there.
	for _, k := range []string{"list", "close", "resume"} {
		if _, ok := sc[k]; !ok {
			t.Errorf("sessionCapabilities lost %q: %v", k, sc)
		}
	}
	if r["protocolVersion"] != float64(1) {
		t.Errorf("protocolVersion = %v", r["protocolVersion"])
	}
}

const delegateOnce = `
model:
  main:
    - tool_calls:
        - id: call-1
          name: subagent
          arguments: '{"description": "Helper", "prompt": "Do it.", "run_in_background": false}'
    - text: PARENT_DONE
    - text: NOTED
  Helper:
    - text: CHILD_DONE
`

func TestSessionDeleteRemovesTheTreeAndListingsAgree(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := startProto(t, dir, protoOpts{script: delegateOnce})
	e.initialize(ctx)
	keep := e.newSession(ctx, cwd, nil)
	id := e.newSession(ctx, cwd, nil)
	e.prompt(ctx, id, "delegate")
	all := e.listed(ctx, map[string]any{"acp-agent/includeChildren": true})
	var child string
	for _, x := range all {
		if x != id && x != keep {
			child = x
		}
	}
	if child == "" || !exists(logFile(dir, child)) {
		t.Fatalf("listing with children = %v: no child log for %s", all, id)
	}

	var res map[string]any
	e.mustCall(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	for _, x := range []string{id, child} {
		if exists(logFile(dir, x)) {
			t.Errorf("log of %s still exists after delete", x)
		}
	}
	if got := e.listed(ctx, map[string]any{"acp-agent/includeChildren": true}); len(got) != 1 || got[0] != keep {
		t.Errorf("listing after delete = %v, want only %s", got, keep)
	}
	// The session is gone from this connection too.
	err := e.call(ctx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "x"}}}, &res)
	if rpcCode(err) != -32002 {
		t.Errorf("prompt after delete = %v, want -32002", err)
	}
	for _, x := range []string{id, child} {
		err = e.call(ctx, "session/delete", map[string]any{"sessionId": x}, &res)
		if rpcCode(err) != -32002 {
			t.Errorf("second delete of %s = %v, want -32002", x, err)
		}
	}
	// A fresh process rebuilding the listing (index and all) agrees.
	e.stop()
	f := startProto(t, dir, protoOpts{script: oneReply})
	f.initialize(ctx)
	if got := f.listed(ctx, map[string]any{"acp-agent/includeChildren": true}); len(got) != 1 || got[0] != keep {
		t.Errorf("listing in a new process = %v, want only %s", got, keep)
	}
}

func TestSessionDeleteRefusals(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := startProto(t, dir, protoOpts{script: delegateOnce})
	e.initialize(ctx)
	id := e.newSession(ctx, cwd, nil)
	e.prompt(ctx, id, "delegate")
	var child string
	for _, x := range e.listed(ctx, map[string]any{"acp-agent/includeChildren": true}) {
		if x != id {
			child = x
		}
	}
	var res map[string]any
	for _, tt := range []struct {
		name   string
		params map[string]any
		code   int64
		says   string
	}{
		{"a subagent", map[string]any{"sessionId": child}, -32602, "delete its top-level session"},
		{"unknown", map[string]any{"sessionId": "no-such-session"}, -32002, "unknown session"},
		{"malformed id", map[string]any{"sessionId": "../x"}, -32602, "invalid session id"},
	} {
		err := e.call(ctx, "session/delete", tt.params, &res)
		if rpcCode(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: delete = %v, want %d saying %q", tt.name, err, tt.code, tt.says)
		}
	}
	if !exists(logFile(dir, id)) || !exists(logFile(dir, child)) {
		t.Errorf("a refused delete removed a log")
	}
}

const hangingReply = `
model:
  main:
    - hang: true
`

func TestSessionDeleteRefusedWhileRunning(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := startProto(t, dir, protoOpts{script: hangingReply})
	e.initialize(ctx)
	id := e.newSession(ctx, cwd, nil)
	done := make(chan error, 1)
	go func() {
		var r map[string]any
		done <- e.call(ctx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}}, &r)
	}()
	waitFor(t, func() bool { return e.app.Agents != nil && agentRunning(e.app, id) })
	var res map[string]any
	err := e.call(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "it is running") {
		t.Fatalf("delete while prompting = %v, want -32602 saying it runs", err)
	}
	if !exists(logFile(dir, id)) {
		t.Fatal("refused delete removed the log")
	}
	if err := e.conn.Notify(ctx, "session/cancel", map[string]any{"sessionId": id}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("cancelled prompt: %v", err)
	}
	e.mustCall(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	if exists(logFile(dir, id)) {
		t.Error("log still there after delete")
	}
}

func TestSessionDeletedInOneProcessIsNotFoundInAnother(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)
	a := startProto(t, dir, protoOpts{script: oneReply})
	b := startProto(t, dir, protoOpts{script: oneReply})
	a.initialize(ctx)
	b.initialize(ctx)
	if got := b.listed(ctx, nil); len(got) != 1 || got[0] != id {
		t.Fatalf("b lists %v before the delete", got)
	}
	var res map[string]any
	a.mustCall(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	if got := b.listed(ctx, nil); len(got) != 0 {
		t.Errorf("b lists %v after a deleted %s", got, id)
	}
	for _, tt := range []struct {
		method string
		params map[string]any
	}{
		{"session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}},
		{"session/resume", map[string]any{"sessionId": id, "cwd": cwd}},
		{"session/delete", map[string]any{"sessionId": id}},
	} {
		err := b.call(ctx, tt.method, tt.params, &res)
		if rpcCode(err) != -32002 {
			t.Errorf("b's %s of a deleted session = %v, want -32002", tt.method, err)
		}
	}
}

func TestSessionDeleteRefusedWhileAnotherProcessHoldsIt(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)
	a := startProto(t, dir, protoOpts{script: oneReply})
	b := startProto(t, dir, protoOpts{script: oneReply})
	a.initialize(ctx)
	b.initialize(ctx)
	var res map[string]any
	b.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &res)
	err := a.call(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "open in another acp-agent process") {
		t.Fatalf("delete of a session held elsewhere = %v, want -32602 saying where it is open", err)
	}
	if !exists(logFile(dir, id)) {
		t.Fatal("refused delete removed the log")
	}
	b.mustCall(ctx, "session/close", map[string]any{"sessionId": id}, &res)
	a.mustCall(ctx, "session/delete", map[string]any{"sessionId": id}, &res)
	if exists(logFile(dir, id)) {
		t.Error("log still there after delete")
	}
}

// waitFor polls cond until it holds or the test's time runs out.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func agentRunning(a *app.App, id string) bool {
	ag, ok := a.Agents.Get(id)
	return ok && ag.Status() == agent.StatusRunning
}

func TestFrameCheckerCatchesABadFrame(t *testing.T) {
	fc := newFrameChecker()
	fc.line("c", []byte(`{"jsonrpc":"2.0","id":1,"method":"session/delete","params":{}}`))
	fc.line("a", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":5,"content":{"type":"text","text":"x"}}}}`))
	if len(fc.errs) != 2 {
		t.Errorf("errors = %q, want the delete without sessionId and the numeric messageId", fc.errs)
	}
}

// storeGate holds the ACP server's storage reads of one kind while armed,
// until the request's context ends.
type storeGate struct {
	op      string
	armed   atomic.Bool
	entered chan struct{}
}

func newStoreGate(op string) *storeGate { return &storeGate{op: op, entered: make(chan struct{}, 4)} }

func (g *storeGate) hook(h *testhooks.Hooks) {
	h.StoreCall = func(ctx context.Context, op, id string) error {
		if op != g.op || !g.armed.Load() {
			return nil
		}
		g.entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
}

func TestCancelRequestCancelsListLoadAndPrompt(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, stored := firstSession(t, ctx)
	for _, tt := range []struct {
		name   string
		op     string // storage read held ("" none)
		script string
		call   func(e *protoEnv) (method string, params map[string]any)
		after  func(t *testing.T, e *protoEnv)
	}{
		{name: "session/list", op: "list", script: oneReply,
			call: func(e *protoEnv) (string, map[string]any) { return "session/list", map[string]any{} }},
		{name: "session/load", op: "header", script: oneReply,
			call: func(e *protoEnv) (string, map[string]any) {
				return "session/load", map[string]any{"sessionId": stored, "cwd": cwd, "mcpServers": []any{}}
			},
			after: func(t *testing.T, e *protoEnv) {
				// Nothing was bound: a prompt finds no session, and a
				// later load works.
				var r map[string]any
				err := e.call(ctxFor(t), "session/prompt", map[string]any{"sessionId": stored, "prompt": []any{map[string]any{"type": "text", "text": "x"}}}, &r)
				if rpcCode(err) != -32002 {
					t.Errorf("prompt after a cancelled load = %v, want -32002", err)
				}
				e.mustCall(ctxFor(t), "session/load", map[string]any{"sessionId": stored, "cwd": cwd, "mcpServers": []any{}}, &r)
			}},
		{name: "session/prompt", script: hangingReply,
			call: func(e *protoEnv) (string, map[string]any) {
				id := e.newSession(ctxFor(t), cwd, nil)
				return "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}}
			},
			after: func(t *testing.T, e *protoEnv) {
				// The turn ended, so the session takes the next prompt.
				for _, id := range e.listed(ctxFor(t), nil) {
					waitFor(t, func() bool { return !agentRunning(e.app, id) })
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gate := newStoreGate(tt.op)
			e := startProto(t, dir, protoOpts{script: tt.script, hooks: gate.hook})
			e.initialize(ctx)
			method, params := tt.call(e)
			gate.armed.Store(tt.op != "")
			done := make(chan error, 1)
			go func() {
				var r map[string]any
				done <- e.conn.Call(ctx, method, params, &r, jsonrpc2.PickID(jsonrpc2.ID{Num: 7001}))
			}()
			if tt.op != "" {
				<-gate.entered
			} else {
				waitFor(t, func() bool {
					sid, _ := params["sessionId"].(string)
					return agentRunning(e.app, sid)
				})
			}
			if err := e.conn.Notify(ctx, "$/cancel_request", map[string]any{"requestId": 7001}); err != nil {
				t.Fatal(err)
			}
			err := <-done
			gate.armed.Store(false)
			if rpcCode(err) != -32800 {
				t.Fatalf("%s after $/cancel_request = %v, want -32800", method, err)
			}
			if tt.after != nil {
				tt.after(t, e)
			}
		})
	}
}

// chunkIDs returns, for session id, the kind and messageId of each message
// chunk received ("" when it has none).
func (e *protoEnv) chunkIDs(id string) [][2]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out [][2]string
	for _, raw := range e.updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind      string  `json:"sessionUpdate"`
				MessageID *string `json:"messageId"`
			} `json:"update"`
		}
		_ = json.Unmarshal(raw, &n)
		if n.SessionID != id || (n.Update.Kind != "agent_message_chunk" && n.Update.Kind != "user_message_chunk") {
			continue
		}
		mid := ""
		if n.Update.MessageID != nil {
			mid = *n.Update.MessageID
		}
		out = append(out, [2]string{n.Update.Kind, mid})
	}
	return out
}

// orderedHandler records session/update notifications on the connection's
// read loop, in the order they arrive (jsonrpc2.AsyncHandler would hand
// each to its own goroutine and lose that order); every other request is
// answered on its own goroutine, since an answer may wait.
type orderedHandler struct {
	record func(*jsonrpc2.Request) bool
	rest   jsonrpc2.Handler
}

func (h orderedHandler) Handle(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if h.record(req) {
		if !req.Notif {
			_ = c.Reply(ctx, req.ID, nil)
		}
		return
	}
	go h.rest.Handle(ctx, c, req)
}

const twoReplies = `
model:
  main:
    - text: "first answer"
    - text: "second answer"
`

func TestMessageIDsAreRecordedAndReplayed(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := startProto(t, dir, protoOpts{script: twoReplies})
	e.initialize(ctx)
	id := e.newSession(ctx, cwd, nil)
	const mine = "5f0c3a52-8e7b-4d0e-9f43-2b1c6d7e8a90"
	var r struct {
		StopReason    string `json:"stopReason"`
		UserMessageID string `json:"userMessageId"`
	}
	e.mustCall(ctx, "session/prompt", map[string]any{"sessionId": id, "messageId": mine,
		"prompt": []any{map[string]any{"type": "text", "text": "one"}}}, &r)
	if r.UserMessageID != mine {
		t.Errorf("userMessageId = %q, want the client's %q", r.UserMessageID, mine)
	}
	e.prompt(ctx, id, "two")
	live := e.chunkIDs(id)
	var answers []string
	for _, c := range live {
		if c[0] != "agent_message_chunk" || len(c[1]) != 36 {
			t.Fatalf("live chunk %v: want agent message chunks with UUID messageIds", c)
		}
		if len(answers) == 0 || answers[len(answers)-1] != c[1] {
			answers = append(answers, c[1])
		}
	}
	if len(answers) != 2 || answers[0] == answers[1] {
		t.Fatalf("live answers' messageIds = %v, want two different ones", answers)
	}
	var bad map[string]any
	err := e.call(ctx, "session/prompt", map[string]any{"sessionId": id, "messageId": "not-a-uuid",
		"prompt": []any{map[string]any{"type": "text", "text": "x"}}}, &bad)
	if rpcCode(err) != -32602 || !strings.Contains(err.Error(), "messageId must be a UUID") {
		t.Errorf("prompt with a bad messageId = %v, want -32602", err)
	}
	e.stop()

	// Two loads in fresh processes show the same ids: the client's for its
	// first message, the live ones for the answers.
	var replays [][][2]string
	for range 2 {
		f := startProto(t, dir, protoOpts{script: oneReply})
		f.initialize(ctx)
		var lr map[string]any
		f.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &lr)
		replays = append(replays, f.chunkIDs(id))
		f.stop()
	}
	got := replays[0]
	if !slices.Equal(got, replays[1]) {
		t.Errorf("two replays differ:\n%v\n%v", got, replays[1])
	}
	var users, agents []string
	for _, c := range got {
		if c[0] == "user_message_chunk" {
			users = append(users, c[1])
		} else if len(agents) == 0 || agents[len(agents)-1] != c[1] {
			agents = append(agents, c[1])
		}
	}
	if len(users) != 2 || users[0] != mine || len(users[1]) != 36 || users[1] == mine {
		t.Errorf("replayed user messageIds = %v, want [%s <a UUID of its own>]", users, mine)
	}
	if !slices.Equal(agents, answers) {
		t.Errorf("replayed answer messageIds = %v, want the live %v", agents, answers)
	}
}

// systemSeen records the system prompt of each model request.
type systemSeen struct {
	model.Model
	mu       sync.Mutex
	systems  []string
	messages []string // the text of the last request's messages
	tools    []string // the tool names of the last request
}

func (m *systemSeen) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	m.systems = append(m.systems, req.System)
	m.tools = m.tools[:0]
	for _, t := range req.Tools {
		m.tools = append(m.tools, t.Name)
	}
	m.messages = m.messages[:0]
	for _, msg := range req.Messages {
		for _, b := range msg.Content {
			m.messages = append(m.messages, b.Text)
		}
	}
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

func (m *systemSeen) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.systems) == 0 {
		return ""
	}
	return m.systems[len(m.systems)-1]
}

// readScript reads path with the read tool, once per prompt.
func readScript(paths ...string) string {
	s := "model:\n  main:\n"
	for i, p := range paths {
		s += fmt.Sprintf("    - tool_calls:\n        - id: call-%d\n          name: read\n          arguments: '{\"path\": %q}'\n    - text: READ%d\n", i, p, i)
	}
	return s
}

// toolResultText is the text of the last tool_call_update of call id.
func (e *protoEnv) toolResult(id, call string) (status, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, raw := range e.updates {
		var n struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind    string `json:"sessionUpdate"`
				ID      string `json:"toolCallId"`
				Status  string `json:"status"`
				Content []struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"content"`
			} `json:"update"`
		}
		_ = json.Unmarshal(raw, &n)
		if n.SessionID != id || n.Update.Kind != "tool_call_update" || n.Update.ID != call {
			continue
		}
		if n.Update.Status != "" {
			status = n.Update.Status
		}
		for _, c := range n.Update.Content {
			text += c.Content.Text
		}
	}
	return status, text
}

func TestAdditionalDirectoriesAreInsideTheBoundary(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	extra, other := t.TempDir(), t.TempDir()
	for _, d := range []string{extra, other} {
		if err := os.WriteFile(filepath.Join(d, "notes.txt"), []byte("NOTES IN "+filepath.Base(d)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var asked atomic.Int32
	answer := func(method string, params json.RawMessage) (any, error) {
		if method == "session/request_permission" {
			asked.Add(1)
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no"}
	}
	seen := &systemSeen{}
	e := startProto(t, dir, protoOpts{
		script: readScript(filepath.Join(extra, "notes.txt"), filepath.Join(other, "notes.txt")),
		hooks: func(h *testhooks.Hooks) {
			h.WrapModel = func(m model.Model) model.Model { seen.Model = m; return seen }
		},
		answer: answer,
	})
	caps := e.initialize(ctx)["agentCapabilities"].(map[string]any)["sessionCapabilities"].(map[string]any)
	if _, ok := caps["additionalDirectories"].(map[string]any); !ok {
		t.Errorf("sessionCapabilities = %v, want additionalDirectories: {}", caps)
	}
	id := e.newSession(ctx, cwd, map[string]any{"additionalDirectories": []string{extra, extra + "/"}})

	// Recorded in the session header, cleaned and without duplicates.
	first, err := os.ReadFile(logFile(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(first, []byte("\n"))
	var h struct {
		AdditionalDirectories []string `json:"additionalDirectories"`
	}
	if err := json.Unmarshal(line, &h); err != nil || !slices.Equal(h.AdditionalDirectories, []string{extra}) {
		t.Errorf("header %s: additionalDirectories = %v, want [%s]", line, h.AdditionalDirectories, extra)
	}

	// A file in the extra root is read without asking, as one in the cwd.
	e.prompt(ctx, id, "read the notes")
	if status, text := e.toolResult(id, "call-0"); status != "completed" || !strings.Contains(text, "NOTES IN "+filepath.Base(extra)) {
		t.Errorf("read in the extra root: %s %q", status, text)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("%d permission requests for a read inside an extra root", n)
	}
	if sys := seen.last(); !strings.Contains(sys, "Additional directories (you may work in them as in the working directory): "+extra+"\n") {
		t.Errorf("system prompt's environment does not list the extra root:\n%s", sys)
	}
	// A directory that is not one of them is still outside: the read asks.
	e.prompt(ctx, id, "read the other notes")
	if n := asked.Load(); n != 1 {
		t.Errorf("%d permission requests for a read outside every root, want 1", n)
	}
	e.stop()

	// A load naming other roots records them; from then on they are the
	// session's, also in a process that loads it without naming any.
	f := startProto(t, dir, protoOpts{script: readScript(filepath.Join(other, "notes.txt")), answer: answer})
	f.initialize(ctx)
	var r map[string]any
	f.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}, "additionalDirectories": []string{other}}, &r)
	f.stop()
	asked.Store(0)
	seen2 := &systemSeen{}
	g := startProto(t, dir, protoOpts{
		script: readScript(filepath.Join(extra, "notes.txt"), filepath.Join(extra, "notes.txt"), filepath.Join(other, "notes.txt")),
		hooks: func(h *testhooks.Hooks) {
			h.WrapModel = func(m model.Model) model.Model { seen2.Model = m; return seen2 }
		},
		answer: answer,
	})
	g.initialize(ctx)
	g.mustCall(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": cwd}, &r)
	g.prompt(ctx, id, "read the other notes again")
	if status, text := g.toolResult(id, "call-2"); status != "completed" || !strings.Contains(text, "NOTES IN "+filepath.Base(other)) || asked.Load() != 0 {
		t.Errorf("read in the recorded root after a restart: %s %q, %d asked", status, text, asked.Load())
	}
	// The recorded system prompt was rewritten to list the new roots.
	if sys := seen2.last(); !strings.Contains(sys, "the working directory): "+other+"\n") || strings.Contains(sys, extra) {
		t.Errorf("system prompt after the load's roots:\n%s", sys)
	}
}

func TestAdditionalDirectoriesAreWritableInTheSandbox(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	ctx := ctxFor(t)
	dir, cwd, extra := t.TempDir(), tempCwd(t), t.TempDir()
	made := filepath.Join(extra, "made.txt")
	script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '{\"command\":\"touch " + made + "\"}'\n    - text: done\n"
	for _, withRoot := range []bool{false, true} {
		e := startProto(t, dir, protoOpts{script: script, config: func(c *app.Config) { c.Sandbox = &sandbox.Policy{TempDir: t.TempDir()} },
			answer: func(method string, _ json.RawMessage) (any, error) {
				return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
			}})
		e.initialize(ctx)
		extraParams := map[string]any{}
		if withRoot {
			extraParams["additionalDirectories"] = []string{extra}
		}
		id := e.newSession(ctx, cwd, extraParams)
		var r map[string]any
		e.mustCall(ctx, "session/set_mode", map[string]any{"sessionId": id, "modeId": "accept-edits"}, &r)
		e.prompt(ctx, id, "touch it")
		e.stop()
		if exists(made) != withRoot {
			t.Errorf("with the extra root %v: %s made = %v", withRoot, made, exists(made))
		}
	}
}

const askScript = `
model:
  main:
    - tool_calls:
        - id: call-ask
          name: ask_user
          arguments: '{"question": "Which database should the tests use?", "choices": ["postgres", "sqlite"]}'
    - text: USING_IT
    - tool_calls:
        - id: call-form
          name: ask_user
          arguments: '{"question": "Where and how many?", "fields": [{"name": "host"}, {"name": "replicas", "type": "integer", "optional": true}]}'
    - text: NOTED
`

func TestAskUserElicitsAQuestionAndRecordsTheAnswer(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	var mu sync.Mutex
	var asked []map[string]any
	answers := []map[string]any{
		{"action": "accept", "content": map[string]any{"answer": "sqlite"}},
		{"action": "decline"},
	}
	seen := &systemSeen{}
	e := startProto(t, dir, protoOpts{script: askScript,
		hooks: func(h *testhooks.Hooks) {
			h.WrapModel = func(m model.Model) model.Model { seen.Model = m; return seen }
		},
		answer: func(method string, params json.RawMessage) (any, error) {
			if method != "elicitation/create" {
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no"}
			}
			var p map[string]any
			_ = json.Unmarshal(params, &p)
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, p)
			return answers[len(asked)-1], nil
		}})
	var r map[string]any
	e.mustCall(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}, &r)
	id := e.newSession(ctx, cwd, nil)
	e.prompt(ctx, id, "set up the tests")
	seen.mu.Lock()
	offered := slices.Contains(seen.tools, "ask_user")
	seen.mu.Unlock()
	if !offered {
		t.Errorf("ask_user not offered to a client with form elicitation: %v", seen.tools)
	}
	if status, text := e.toolResult(id, "call-ask"); status != "completed" || text != "The person answered: sqlite" {
		t.Errorf("ask_user result = %s %q", status, text)
	}
	e.prompt(ctx, id, "and where?")
	if status, text := e.toolResult(id, "call-form"); status != "completed" || !strings.Contains(text, "declined") {
		t.Errorf("declined ask_user result = %s %q", status, text)
	}
	mu.Lock()
	if len(asked) != 2 {
		t.Fatalf("questions asked: %v", asked)
	}
	q := asked[0]
	schema, _ := q["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	answer, _ := props["answer"].(map[string]any)
	if q["sessionId"] != id || q["toolCallId"] != "call-ask" || q["mode"] != "form" || q["message"] != "Which database should the tests use?" ||
		len(answer["oneOf"].([]any)) != 2 {
		t.Errorf("first question = %v", q)
	}
	form := asked[1]["requestedSchema"].(map[string]any)
	if req, _ := form["required"].([]any); len(req) != 1 || req[0] != "host" {
		t.Errorf("form's required = %v, want [host]", form["required"])
	}
	mu.Unlock()
	e.stop()

	// A replay shows the question and its answer as they were.
	f := startProto(t, dir, protoOpts{script: oneReply})
	f.initialize(ctx)
	f.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &r)
	if status, text := f.toolResult(id, "call-ask"); status != "completed" || text != "The person answered: sqlite" {
		t.Errorf("replayed ask_user = %s %q", status, text)
	}
}

func TestAskUserIsNotOfferedWithoutElicitation(t *testing.T) {
	ctx := ctxFor(t)
	seen := &systemSeen{}
	e := startProto(t, t.TempDir(), protoOpts{script: askScript,
		hooks: func(h *testhooks.Hooks) {
			h.WrapModel = func(m model.Model) model.Model { seen.Model = m; return seen }
		}})
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t), nil)
	e.prompt(ctx, id, "set up the tests")
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if slices.Contains(seen.tools, "ask_user") || len(seen.tools) == 0 {
		t.Errorf("tools offered without elicitation: %v", seen.tools)
	}
	if status, _ := e.toolResult(id, "call-ask"); status != "failed" {
		t.Errorf("a call of the unoffered ask_user ended %q, want failed", status)
	}
}

const threeReplies = "model:\n  main:\n    - text: one\n    - text: two\n    - text: three\n"

func TestClientSystemPromptIsItsOwnSectionAndKept(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	text := func(s string) map[string]any {
		return map[string]any{"mode": "append", "content": []any{map[string]any{"type": "text", "text": s}}}
	}
	seen := &systemSeen{}
	wrap := func(s *systemSeen) func(h *testhooks.Hooks) {
		return func(h *testhooks.Hooks) { h.WrapModel = func(m model.Model) model.Model { s.Model = m; return s } }
	}
	e := startProto(t, dir, protoOpts{script: threeReplies, hooks: wrap(seen)})
	caps := e.initialize(ctx)["agentCapabilities"].(map[string]any)["sessionCapabilities"].(map[string]any)
	if _, ok := caps["systemPrompt"].(map[string]any); !ok {
		t.Errorf("sessionCapabilities = %v, want systemPrompt: {}", caps)
	}
	var res map[string]any
	for _, tt := range []struct {
		name string
		sp   map[string]any
		says string
	}{
		{"override", map[string]any{"mode": "override", "content": []any{map[string]any{"type": "text", "text": "x"}}}, "mode \"append\" only"},
		{"image", map[string]any{"mode": "append", "content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": "AA=="}}}, "must be text blocks"},
	} {
		err := e.call(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}, "systemPrompt": tt.sp}, &res)
		if rpcCode(err) != -32602 || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: session/new = %v, want -32602 saying %q", tt.name, err, tt.says)
		}
	}
	id := e.newSession(ctx, cwd, map[string]any{"systemPrompt": text("Answer in French.")})
	e.prompt(ctx, id, "hello")
	sys := seen.last()
	if !strings.HasSuffix(sys, "\n\n<client-instructions>\nThe editor the person uses adds these instructions; follow them as you follow the project's.\n\nAnswer in French.\n</client-instructions>\n") {
		t.Errorf("system prompt does not end with the client's section:\n%s", sys)
	}
	log, _ := os.ReadFile(logFile(dir, id))
	if !bytes.Contains(log, []byte(`"type":"session/client-system-prompt"`)) {
		t.Errorf("the client's system prompt is not in the log")
	}
	e.stop()

	// Loaded without one, the session keeps it; loaded with another, the
	// recorded prompt's section is rewritten and the rest kept.
	for _, tt := range []struct {
		name string
		sp   map[string]any
		want string
	}{
		{"kept", nil, "Answer in French."},
		{"replaced", text("Answer in German."), "Answer in German."},
	} {
		s := &systemSeen{}
		f := startProto(t, dir, protoOpts{script: threeReplies, hooks: wrap(s)})
		f.initialize(ctx)
		params := map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}
		if tt.sp != nil {
			params["systemPrompt"] = tt.sp
		}
		f.mustCall(ctx, "session/load", params, &res)
		f.prompt(ctx, id, "again")
		got := s.last()
		if !strings.Contains(got, tt.want+"\n</client-instructions>\n") || strings.Count(got, "<client-instructions>") != 1 {
			t.Errorf("%s: system prompt after load:\n%s", tt.name, got)
		}
		if head, _, _ := strings.Cut(got, "<client-instructions>"); !strings.HasPrefix(sys, head) {
			t.Errorf("%s: the rest of the recorded prompt changed", tt.name)
		}
		f.stop()
	}
}

// sandboxValue returns the sandbox option's currentValue in a
// configOptions list, and whether it is there.
func sandboxValue(opts []any) (on, found bool) {
	for _, o := range opts {
		m, _ := o.(map[string]any)
		if m["id"] == "sandbox" {
			v, _ := m["currentValue"].(bool)
			return v, m["type"] == "boolean"
		}
	}
	return false, false
}

func TestSandboxBooleanConfigOption(t *testing.T) {
	if sandbox.ProbeKernel().ABI < 1 {
		t.Skip("this kernel has no Landlock: the sandbox cannot be tested here")
	}
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	script := "model:\n  main:\n" + strings.Repeat("    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '{\"command\":\"touch made.txt\"}'\n    - text: done\n", 2)
	var asked atomic.Int32
	answer := func(method string, _ json.RawMessage) (any, error) {
		asked.Add(1)
		return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
	}
	optIn := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}}}

	// Without the opt-in there is no boolean option.
	plain := startProto(t, t.TempDir(), protoOpts{script: script})
	plain.initialize(ctx)
	var nr struct {
		SessionID     string `json:"sessionId"`
		ConfigOptions []any  `json:"configOptions"`
	}
	plain.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr)
	if _, found := sandboxValue(nr.ConfigOptions); found {
		t.Errorf("sandbox option offered without the client's opt-in: %v", nr.ConfigOptions)
	}
	var res map[string]any
	err := plain.call(ctx, "session/set_config_option", map[string]any{"sessionId": nr.SessionID, "configId": "sandbox", "type": "boolean", "value": true}, &res)
	if rpcCode(err) != -32602 {
		t.Errorf("set sandbox without the opt-in = %v, want -32602", err)
	}
	plain.stop()

	e := startProto(t, dir, protoOpts{script: script, answer: answer})
	e.mustCall(ctx, "initialize", optIn, &res)
	e.mustCall(ctx, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &nr)
	id := nr.SessionID
	if on, found := sandboxValue(nr.ConfigOptions); !found || on {
		t.Fatalf("configOptions = %v, want the sandbox option, off", nr.ConfigOptions)
	}
	e.mustCall(ctx, "session/set_mode", map[string]any{"sessionId": id, "modeId": "accept-edits"}, &res)
	// Off: accept-edits asks before the command.
	e.prompt(ctx, id, "touch it")
	if asked.Load() != 1 || exists(filepath.Join(cwd, "made.txt")) {
		t.Fatalf("sandbox off: %d asked, made = %v; want one question and nothing run", asked.Load(), exists(filepath.Join(cwd, "made.txt")))
	}
	var sr struct {
		ConfigOptions []any `json:"configOptions"`
	}
	e.mustCall(ctx, "session/set_config_option", map[string]any{"sessionId": id, "configId": "sandbox", "type": "boolean", "value": true}, &sr)
	if on, _ := sandboxValue(sr.ConfigOptions); !on {
		t.Fatalf("set_config_option answer = %v, want sandbox on", sr.ConfigOptions)
	}
	// On: the sandboxed command runs unasked (where the kernel keeps the
	// protected paths; else it still asks).
	e.prompt(ctx, id, "touch it again")
	if n := keepsAsks(); n == 0 && (!exists(filepath.Join(cwd, "made.txt")) || asked.Load() != 1) {
		t.Errorf("sandbox on: made = %v, %d asked; want the command run unasked", exists(filepath.Join(cwd, "made.txt")), asked.Load())
	} else if n != 0 && asked.Load() != 2 {
		t.Errorf("sandbox on, a kernel that cannot keep protected paths: %d asked, want 2", asked.Load())
	}
	e.stop()

	// A load in a new process keeps the choice.
	f := startProto(t, dir, protoOpts{script: script})
	f.mustCall(ctx, "initialize", optIn, &res)
	var lr struct {
		ConfigOptions []any `json:"configOptions"`
	}
	f.mustCall(ctx, "session/load", map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}, &lr)
	if on, _ := sandboxValue(lr.ConfigOptions); !on {
		t.Errorf("loaded configOptions = %v, want sandbox on", lr.ConfigOptions)
	}
}
