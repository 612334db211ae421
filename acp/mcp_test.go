package acp_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
)

// Environment of the test binary re-executed as a stdio MCP server.
const (
	mcpStdioEnv   = "ACP_AGENT_TEST_MCP_STDIO"
	mcpPidFileEnv = "ACP_AGENT_TEST_MCP_PIDFILE"
	mcpEnvFileEnv = "ACP_AGENT_TEST_MCP_ENVFILE"
)

// serveMCPIfAsked turns this process into the demo MCP server on stdio
// when the test re-executed itself for that, and exits.
func serveMCPIfAsked() {
	if os.Getenv(mcpStdioEnv) != "1" {
		return
	}
	if f := os.Getenv(mcpPidFileEnv); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if f := os.Getenv(mcpEnvFileEnv); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(os.Environ(), "\n")), 0o600)
	}
	if err := mcptest.ServeStdio(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

const mcpScript = `
model:
  main:
    - tool_calls:
        - {id: call-echo, name: mcp__web__echo, arguments: '{"text":"hello"}'}
        - {id: call-add, name: mcp__local__add, arguments: '{"a":2,"b":40}'}
        - {id: call-fail, name: mcp__web__fail, arguments: '{}'}
    - text: "Done."
`

// TestMCPServersFromNewSession starts an HTTP server (httptest with the
// SDK's streamable handler), a stdio server (this binary re-executed) and
// two that fail; the failures are reported after the response without
// failing the session, the model calls tools of both live servers, and
// closing the session stops the stdio server's process.
func TestMCPServersFromNewSession(t *testing.T) {
	ctx := ctxFor(t)
	hs := httptest.NewServer(mcptest.Handler())
	defer hs.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	dead := httptest.NewServer(nil)
	dead.Close() // connection refused

	e := start(t, t.TempDir(), loadScript(t, mcpScript))
	init := e.initialize(ctx)
	if mc := init.AgentCapabilities.McpCapabilities; !mc.Http || !mc.Sse {
		t.Errorf("mcpCapabilities = %+v, want http and sse", mc)
	}
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{
		{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "web", Url: hs.URL, Headers: []acpsdk.HttpHeader{{Name: "X-Test", Value: "1"}}}},
		{Stdio: &acpsdk.McpServerStdio{Name: "local", Command: exe, Args: []string{}, Env: []acpsdk.EnvVariable{
			{Name: mcpStdioEnv, Value: "1"}, {Name: mcpPidFileEnv, Value: pidFile}}}},
		{Stdio: &acpsdk.McpServerStdio{Name: "missing", Command: "/nonexistent/mcp-server", Args: []string{}, Env: []acpsdk.EnvVariable{}}},
		{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "down", Url: dead.URL, Headers: []acpsdk.HttpHeader{}}},
	}})
	if err != nil {
		t.Fatalf("session/new with failing servers must succeed: %v", err)
	}
	id := string(r.SessionId)
	// The notices and the commands follow the response.
	awaitCommands(t, ctx, e, id)
	notices := strings.Join(transcript(e.rec.snapshot(id)), "\n")
	for _, name := range []string{"missing", "down"} {
		if !strings.Contains(notices, "MCP server `"+name+"` could not be started") {
			t.Errorf("no notice for server %s:\n%s", name, notices)
		}
	}
	if strings.Contains(notices, "`web`") || strings.Contains(notices, "`local`") {
		t.Errorf("working servers reported as failed:\n%s", notices)
	}
	// MCP tools with effects ask like any other: bypass runs them here
	// (the gate itself is tested in gate_matrix_test.go).
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acp.ModeBypass}); err != nil {
		t.Fatal(err)
	}
	e.rec.reset()

	resp, err := e.prompt(ctx, id, "use the tools")
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", resp, err)
	}
	got := strings.Join(transcript(e.rec.snapshot(id)), "\n")
	for _, want := range []string{
		`tool_call call-echo kind=read status=in_progress title="web: Echo" rawInput={"text":"hello"}`,
		`tool_call_update call-echo status=completed content="echo: hello" rawOutput="echo: hello"`,
		`tool_call call-add kind=other status=in_progress title="local: add" rawInput={"a":2,"b":40}`,
		`tool_call_update call-add status=completed content="42" rawOutput={"sum":42}`,
		`tool_call_update call-fail status=failed content="the tool failed on purpose"`,
		`agent_message_chunk Done.`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the stdio server did not start: %v", err)
	}
	pid, _ := strconv.Atoi(string(raw))
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("stdio server %d not running during the session: %v", pid, err)
	}
	if _, err := e.cs.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: r.SessionId}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stdio server %d still exists after session/close (kill 0: %v)", pid, err)
	}
}

// TestMCPServersStopAtShutdown: servers of sessions still open when the
// client goes away are stopped by the graceful shutdown (goleak in
// TestMain checks that no client goroutine is left).
func TestMCPServersStopAtShutdown(t *testing.T) {
	ctx := ctxFor(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := start(t, t.TempDir(), loadScript(t, mcpScript))
	e.initialize(ctx)
	if _, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{
		{Stdio: &acpsdk.McpServerStdio{Name: "local", Command: exe, Args: []string{}, Env: []acpsdk.EnvVariable{
			{Name: mcpStdioEnv, Value: "1"}, {Name: mcpPidFileEnv, Value: pidFile}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(raw))
	e.stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stdio server %d still exists after shutdown (kill 0: %v)", pid, err)
	}
}

// TestMCPServersOnLoad: session/load starts the servers it names for the
// restored session, and the tools work in the continued conversation.
func TestMCPServersOnLoad(t *testing.T) {
	ctx := ctxFor(t)
	hs := httptest.NewServer(mcptest.Handler())
	defer hs.Close()
	dir, cwd := t.TempDir(), tempCwd(t)
	first := start(t, dir, loadScript(t, `
model:
  main:
    - text: "hi"
    - tool_calls:
        - {id: call-echo, name: mcp__web__echo, arguments: '{"text":"again"}'}
    - text: "ok"
`))
	first.initialize(ctx)
	id := first.newSession(ctx, cwd)
	if _, err := first.prompt(ctx, id, "hello"); err != nil {
		t.Fatal(err)
	}
	first.stop()

	second := start(t, dir, loadScript(t, `
model:
  main:
    - text: "hi"
    - tool_calls:
        - {id: call-echo, name: mcp__web__echo, arguments: '{"text":"again"}'}
    - text: "ok"
`))
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{
		{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "web", Url: hs.URL, Headers: []acpsdk.HttpHeader{}}},
	}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	second.rec.reset()
	if _, err := second.prompt(ctx, id, "echo again"); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(transcript(second.rec.snapshot(id)), "\n")
	if !strings.Contains(got, `tool_call_update call-echo status=completed content="echo: again"`) {
		t.Errorf("MCP tool after load:\n%s", got)
	}
}

// awaitCommands waits for the available_commands_update of session id.
func awaitCommands(t *testing.T, ctx context.Context, e *env, id string) acpsdk.SessionNotification {
	t.Helper()
	var got acpsdk.SessionNotification
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		for _, n := range ns {
			if string(n.SessionId) == id && n.Update.AvailableCommandsUpdate != nil {
				got = n
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no available_commands_update for %s: %v", id, err)
	}
	return got
}

// TestCancelDuringMCPToolCall: session/cancel while an MCP tool runs
// cancels the call on the server (the demo "wait" tool returns only when
// its call is cancelled), the prompt answers cancelled with the call
// closed as failed, and the session stays usable.
func TestCancelDuringMCPToolCall(t *testing.T) {
	ctx := ctxFor(t)
	// The stateless demo server cannot route the client's cancellation
	// to the running call; its Close releases it.
	hs, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	e := start(t, t.TempDir(), loadScript(t, `
model:
  main:
    - tool_calls:
        - {id: call-wait, name: mcp__web__wait, arguments: '{}'}
    - text: "after"
`))
	e.initialize(ctx)
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{
		{Http: &acpsdk.McpServerHttpInline{Type: "http", Name: "web", Url: hs.URL + "/web", Headers: []acpsdk.HttpHeader{}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(r.SessionId)
	// wait is not annotated read-only: bypass runs it without asking.
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acp.ModeBypass}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp acpsdk.PromptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := e.prompt(ctx, id, "wait")
		done <- result{resp, err}
	}()
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		for _, n := range ns {
			if n.Update.ToolCall != nil && n.Update.ToolCall.ToolCallId == "call-wait" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: r.SessionId}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Fatalf("prompt = %+v, %v; want cancelled", res.resp, res.err)
	}
	got := strings.Join(transcript(e.rec.snapshot(id)), "\n")
	if !strings.Contains(got, "tool_call_update call-wait status=failed") {
		t.Errorf("the cancelled MCP call was not closed as failed:\n%s", got)
	}
	if resp, err := e.prompt(ctx, id, "go on"); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("prompt after the cancel = %+v, %v; want end_turn", resp, err)
	}
}

// TestMCPStdioServerGetsNoSecrets: a stdio MCP server starts from the
// environment commands get (no provider key, no *TOKEN* names) plus what
// the editor passed for it, which it keeps whatever its name.
func TestMCPStdioServerGetsNoSecrets(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-leak")
	t.Setenv("MY_SERVICE_TOKEN", "tok-leak")
	t.Setenv("PLAIN_VAR", "plain")
	envFile := filepath.Join(t.TempDir(), "env")
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, "model:\n  main:\n    - text: hi\n"))
	e.initialize(ctx)
	r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{
		{Stdio: &acpsdk.McpServerStdio{Name: "local", Command: exe, Args: []string{}, Env: []acpsdk.EnvVariable{
			{Name: mcpStdioEnv, Value: "1"}, {Name: mcpEnvFileEnv, Value: envFile}, {Name: "EDITOR_GIVEN_TOKEN", Value: "given"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	awaitCommands(t, ctx, e, string(r.SessionId))
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("the server did not start: %v", err)
	}
	env := "\n" + string(raw) + "\n"
	for _, leak := range []string{"sk-leak", "tok-leak"} {
		if strings.Contains(env, leak) {
			t.Errorf("the MCP server got the secret %q", leak)
		}
	}
	for _, want := range []string{"\nPLAIN_VAR=plain\n", "\nEDITOR_GIVEN_TOKEN=given\n", "\nPATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("the MCP server's environment lacks %q", strings.TrimSpace(want))
		}
	}
}
