package acp_test

// This file defines the in-process test environment: the real composition
// (package app) served over io.Pipe pairs to the SDK's client side, with a
// recording client.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

func TestMain(m *testing.M) {
	serveMCPIfAsked() // the test binary doubles as a stdio MCP server (mcp_test.go)
	sandbox.Main()    // and as the helper of sandboxed commands (sandbox_test.go)
	goleak.VerifyTestMain(m)
}

// recorder is the test client: it records every session/update and
// refuses every client-side request (the agent must not make any it was
// not granted capabilities for).
type recorder struct {
	mu      sync.Mutex
	updates []acpsdk.SessionNotification
	changed chan struct{}
	// onUpdate, when set (under mu), sees each update as it arrives.
	onUpdate func(acpsdk.SessionNotification)
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	// The hook runs before the update is recorded, so whoever awaits the
	// update also sees what the hook did with it.
	r.mu.Lock()
	hook := r.onUpdate
	r.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	r.mu.Lock()
	r.updates = append(r.updates, n)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return nil
}

// snapshot returns the updates recorded so far for session id ("" = all).
func (r *recorder) snapshot(id string) []acpsdk.SessionNotification {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []acpsdk.SessionNotification
	for _, n := range r.updates {
		if id == "" || string(n.SessionId) == id {
			out = append(out, n)
		}
	}
	return out
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.updates = nil
	r.mu.Unlock()
}

// await blocks until cond holds for the recorded updates (checked on each
// notification, no polling) or ctx ends.
func (r *recorder) await(ctx context.Context, cond func([]acpsdk.SessionNotification) bool) error {
	for {
		r.mu.Lock()
		ok := cond(r.updates)
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

var errNotGranted = errors.New("test client: not supported")

func (r *recorder) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNotGranted
}
func (r *recorder) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNotGranted
}
func (r *recorder) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{}, errNotGranted
}
func (r *recorder) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNotGranted
}
func (r *recorder) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNotGranted
}
func (r *recorder) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNotGranted
}
func (r *recorder) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNotGranted
}
func (r *recorder) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNotGranted
}

// env is one agent "process" (an app.App serving over pipes) and its client.
type env struct {
	t    testing.TB
	dir  string
	app  *app.App
	cs   *acpsdk.ClientSideConnection
	rec  *recorder
	c2aW *io.PipeWriter // client -> agent
	a2cW *io.PipeWriter // agent -> client
	done chan error
	once sync.Once
}

// testLogger writes to the test's output without timestamps.
func testLogger(t testing.TB) *slog.Logger {
	if tt, ok := t.(*testing.T); ok {
		return slog.New(slog.NewTextHandler(tt.Output(), &slog.HandlerOptions{
			Level: slog.LevelDebug,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			},
		}))
	}
	return slog.New(slog.DiscardHandler)
}

// loadScript parses a scripted model from YAML text.
func loadScript(t testing.TB, yaml string) model.Model {
	t.Helper()
	s, err := scripted.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse script: %v", err)
	}
	return scripted.New(s)
}

// start serves a fresh composition on data directory dir.
func start(t testing.TB, dir string, m model.Model, tools ...tool.Tool) *env {
	t.Helper()
	return startCfg(t, dir, m, nil, tools...)
}

// startCfg is start with the app's config adjusted by edit (nil: as is).
func startCfg(t testing.TB, dir string, m model.Model, edit func(*app.Config), tools ...tool.Tool) *env {
	t.Helper()
	cfg := app.Config{
		DataDir: dir,
		Tools:   tools,
		Version: "test",
		Logger:  testLogger(t),
		Testing: &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true},
	}
	if edit != nil {
		edit(&cfg)
	}
	a, err := app.New(cfg)
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

// stop closes the client's end (EOF for the agent), waits for the agent's
// graceful shutdown and releases everything.
func (e *env) stop() {
	e.once.Do(func() {
		e.c2aW.Close()
		if err := <-e.done; err != nil {
			e.t.Errorf("Serve: %v", err)
		}
		if err := e.app.Close(); err != nil {
			e.t.Errorf("Close: %v", err)
		}
		e.a2cW.Close()
	})
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) initialize(ctx context.Context) acpsdk.InitializeResponse {
	e.t.Helper()
	r, err := e.cs.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil {
		e.t.Fatalf("initialize: %v", err)
	}
	return r
}

func (e *env) newSession(ctx context.Context, cwd string) string {
	e.t.Helper()
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		e.t.Fatalf("session/new: %v", err)
	}
	return string(r.SessionId)
}

func (e *env) prompt(ctx context.Context, id, text string) (acpsdk.PromptResponse, error) {
	return e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
}

// render prints an update as one comparable line.
func render(n acpsdk.SessionNotification) string {
	u := n.Update
	js := func(v any) string {
		if v == nil {
			return "-"
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	text := func(cs []acpsdk.ToolCallContent) string {
		var parts []string
		for _, c := range cs {
			if c.Content != nil && c.Content.Content.Text != nil {
				parts = append(parts, c.Content.Content.Text.Text)
			}
		}
		return strings.Join(parts, "|")
	}
	block := func(cb acpsdk.ContentBlock) string {
		if cb.Text != nil {
			return cb.Text.Text
		}
		return js(cb)
	}
	switch {
	case u.UserMessageChunk != nil:
		return "user_message_chunk " + block(u.UserMessageChunk.Content)
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk " + block(u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		return "agent_thought_chunk " + block(u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		c := u.ToolCall
		return fmt.Sprintf("tool_call %s kind=%s status=%s title=%q rawInput=%s", c.ToolCallId, c.Kind, c.Status, c.Title, js(c.RawInput))
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		status := "-"
		if c.Status != nil {
			status = string(*c.Status)
		}
		s := fmt.Sprintf("tool_call_update %s status=%s content=%q", c.ToolCallId, status, text(c.Content))
		if c.RawOutput != nil {
			s += " rawOutput=" + js(c.RawOutput)
		}
		if c.Meta != nil {
			s += " meta=" + js(c.Meta)
		}
		return s
	case u.SessionInfoUpdate != nil:
		t := "-"
		if u.SessionInfoUpdate.Title != nil {
			t = *u.SessionInfoUpdate.Title
		}
		return "session_info_update title=" + t
	}
	return "other " + js(u)
}

// transcript renders updates, merging runs of message or thought chunks
// (how the model's text is split into chunks is the model's business).
// available_commands_update (sent with every new or loaded session) is
// left out; commands_test.go checks it.
func transcript(ns []acpsdk.SessionNotification) []string {
	var out []string
	for _, n := range ns {
		if n.Update.AvailableCommandsUpdate != nil {
			continue
		}
		line := render(n)
		if len(out) > 0 {
			for _, kind := range []string{"agent_message_chunk ", "agent_thought_chunk "} {
				if strings.HasPrefix(line, kind) && strings.HasPrefix(out[len(out)-1], kind) {
					out[len(out)-1] += strings.TrimPrefix(line, kind)
					line = ""
				}
			}
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

func tempCwd(t testing.TB) string {
	d := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
