package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// echoTool returns its text argument, reporting one progress line first.
type echoTool struct{}

func (echoTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "echo", Description: "echo the text back",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}
func (echoTool) Kind() string { return "read" }
func (echoTool) Title(args json.RawMessage) string {
	var p struct{ Text string }
	_ = json.Unmarshal(args, &p)
	return "Echo " + p.Text
}
func (echoTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var p struct{ Text string }
	if err := json.Unmarshal(inv.Arguments, &p); err != nil {
		return tool.Result{}, err
	}
	if inv.Progress != nil {
		inv.Progress(tool.Progress{Text: "echoing", Meta: map[string]any{acp.MetaSubagent: map[string]any{"childSessionId": "c1", "mode": "one-shot", "depth": 1}}})
	}
	return tool.TextResult(p.Text, map[string]any{"echoed": p.Text}), nil
}

// blockTool runs until its call is cancelled.
type blockTool struct{}

func (blockTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "block", Description: "wait until cancelled", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (blockTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	<-ctx.Done()
	return tool.Result{}, context.Cause(ctx)
}

const echoScript = `
model:
  main:
    - reasoning: "The user wants an echo."
      text: "Let me echo."
      tool_calls:
        - id: call-1
          name: echo
          arguments: '{"text":"ping"}'
    - text: "Done."
`

// wantEchoTurn is the exact live stream of the echo prompt.
var wantEchoTurn = []string{
	"session_info_update title=please echo ping",
	"agent_thought_chunk The user wants an echo.",
	"agent_message_chunk Let me echo.",
	`tool_call call-1 kind=read status=in_progress title="Echo ping" rawInput={"text":"ping"}`,
	`tool_call_update call-1 status=in_progress content="echoing" meta={"acp-agent/subagent":{"childSessionId":"c1","depth":1,"mode":"one-shot"}}`,
	`tool_call_update call-1 status=completed content="ping" rawOutput={"echoed":"ping"}`,
	"agent_message_chunk Done.",
}

func TestInitializeAdvertisesHonestCapabilities(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript))
	r := e.initialize(ctx)
	if r.ProtocolVersion != 1 || r.AgentInfo == nil || r.AgentInfo.Name != "acp-agent" || r.AgentInfo.Version != "test" {
		t.Errorf("protocol/agentInfo = %v %+v", r.ProtocolVersion, r.AgentInfo)
	}
	c := r.AgentCapabilities
	if !c.LoadSession || c.SessionCapabilities.List == nil || c.SessionCapabilities.Close == nil ||
		c.SessionCapabilities.Resume == nil || c.SessionCapabilities.Fork == nil || c.SessionCapabilities.AdditionalDirectories == nil {
		t.Errorf("session capabilities = %+v loadSession=%v", c.SessionCapabilities, c.LoadSession)
	}
	if !c.PromptCapabilities.EmbeddedContext || c.PromptCapabilities.Image || c.PromptCapabilities.Audio {
		t.Errorf("prompt capabilities = %+v", c.PromptCapabilities)
	}
	if r.AuthMethods == nil || len(r.AuthMethods) != 0 {
		t.Errorf("authMethods = %#v, want []", r.AuthMethods)
	}
}

func TestPromptStreamsToolCallInOrder(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript), echoTool{})
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	resp, err := e.prompt(ctx, id, "please echo ping")
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason = %q, want end_turn", resp.StopReason)
	}
	// The SDK's notification barrier makes every update sent before the
	// response visible here.
	got := transcript(e.rec.snapshot(id))
	if !slices.Equal(got, wantEchoTurn) {
		t.Errorf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantEchoTurn, "\n"))
	}
}

func TestLoadReplaysConversationInFreshProcess(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	first := start(t, dir, loadScript(t, echoScript), echoTool{})
	first.initialize(ctx)
	id := first.newSession(ctx, cwd)
	if _, err := first.prompt(ctx, id, "please echo ping"); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	first.stop()

	second := start(t, dir, loadScript(t, echoScript), echoTool{})
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	got := transcript(second.rec.snapshot(id))
	// Replay shows the user's message first and everything the live stream
	// showed except transient progress.
	want := []string{"user_message_chunk please echo ping"}
	for _, l := range wantEchoTurn {
		if !strings.Contains(l, "status=in_progress content=") {
			want = append(want, l)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("replay:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The loaded session is live again: it lists and takes prompts.
	list, err := second.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{})
	if err != nil {
		t.Fatalf("session/list: %v", err)
	}
	if len(list.Sessions) != 1 || string(list.Sessions[0].SessionId) != id || list.Sessions[0].Title == nil || *list.Sessions[0].Title != "please echo ping" || list.Sessions[0].Cwd != cwd {
		t.Errorf("list = %s", mustJSON(list))
	}
}

func TestCancelDuringHangingModelCall(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, `
model:
  main:
    - text: "thinking about it"
      hang: true
`))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	done := make(chan acpsdk.PromptResponse, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := e.prompt(ctx, id, "go")
		done <- r
		errc <- err
	}()
	// The model streamed its text and now hangs.
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil })
	}); err != nil {
		t.Fatal(err)
	}
	cancelWithinASecond(t, ctx, e, id, done)
	if err := <-errc; err != nil {
		t.Fatalf("prompt error: %v", err)
	}
}

// cancelWithinASecond sends session/cancel for session id and requires the
// pending prompt, answered on done, to end "cancelled" within one second.
func cancelWithinASecond(t *testing.T, ctx context.Context, e *env, id string, done <-chan acpsdk.PromptResponse) {
	t.Helper()
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	bound, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	select {
	case r := <-done:
		if r.StopReason != acpsdk.StopReasonCancelled {
			t.Errorf("stop reason = %q, want cancelled", r.StopReason)
		}
	case <-bound.Done():
		t.Fatal("prompt not answered within 1s of session/cancel")
	}
}

func TestCancelClosesRunningToolCallAsFailed(t *testing.T) {
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
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, err := e.prompt(ctx, id, "block please")
		if err != nil {
			t.Errorf("prompt error: %v", err)
		}
		done <- r
	}()
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool { return n.Update.ToolCall != nil })
	}); err != nil {
		t.Fatal(err)
	}
	cancelWithinASecond(t, ctx, e, id, done)
	got := transcript(e.rec.snapshot(id))
	last := got[len(got)-1]
	if !strings.HasPrefix(last, "tool_call_update call-b status=failed") {
		t.Errorf("last update = %s, want the tool call closed as failed\nall:\n%s", last, strings.Join(got, "\n"))
	}
}

func TestSecondPromptWhileInFlightIsInvalidParams(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, `
model:
  main:
    - text: "busy"
      hang: true
`))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	first := make(chan error, 1)
	go func() { _, err := e.prompt(ctx, id, "one"); first <- err }()
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil })
	}); err != nil {
		t.Fatal(err)
	}
	_, err := e.prompt(ctx, id, "two")
	wantRPCError(t, err, -32602, "already in flight")
	// The SDK cancels the first prompt's context when a second one arrives
	// on the same session (acp.md §2.2); it still gets an answer.
	_ = e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)})
	if err := <-first; err != nil {
		t.Errorf("first prompt: %v", err)
	}
}

func TestPromptWithoutModelExplainsConfiguration(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil)
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.prompt(ctx, id, "hello")
	wantRPCError(t, err, -32603, "--model script:PATH")
}

func TestTurnFailureIsRPCError(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, `
model:
  main:
    - error: "upstream exploded"
`))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.prompt(ctx, id, "hello")
	wantRPCError(t, err, -32603, "upstream exploded")
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   acpsdk.StopReason
	}{
		{"max tokens", "model:\n  main:\n    - text: cut\n      finish: length\n", acpsdk.StopReasonMaxTokens},
		{"refusal", "model:\n  main:\n    - text: no\n      finish: content-filter\n", acpsdk.StopReasonRefusal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := ctxFor(t)
			e := start(t, t.TempDir(), loadScript(t, tt.script))
			e.initialize(ctx)
			id := e.newSession(ctx, tempCwd(t))
			r, err := e.prompt(ctx, id, "hello")
			if err != nil {
				t.Fatal(err)
			}
			if r.StopReason != tt.want {
				t.Errorf("stop reason = %q, want %q", r.StopReason, tt.want)
			}
		})
	}
}

func TestNewSessionRequiresAbsoluteCwd(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil)
	e.initialize(ctx)
	_, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []acpsdk.McpServer{}})
	wantRPCError(t, err, -32602, "cwd must be an absolute path")
	// mcpServers are accepted and ignored.
	if _, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: tempCwd(t), McpServers: []acpsdk.McpServer{{Stdio: &acpsdk.McpServerStdio{Name: "x", Command: "/bin/true", Args: []string{}, Env: []acpsdk.EnvVariable{}}}}}); err != nil {
		t.Errorf("session/new with mcpServers: %v", err)
	}
}

func TestUnsupportedContentIsInvalidParams(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: []acpsdk.ContentBlock{acpsdk.ImageBlock("AAAA", "image/png")}})
	wantRPCError(t, err, -32602, "image content is not supported")
	_, err = e.cs.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(id), Prompt: []acpsdk.ContentBlock{}})
	wantRPCError(t, err, -32602, "empty prompt")
}

func TestListSessionsPagesNewestFirstAndFilters(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil)
	e.initialize(ctx)
	cwdA, cwdB := tempCwd(t), tempCwd(t)
	var ids []string
	for i := range acp.DefaultPageSize + 2 {
		cwd := cwdA
		if i%2 == 1 {
			cwd = cwdB
		}
		ids = append(ids, e.newSession(ctx, cwd))
	}
	// A persisted child session: hidden unless asked for.
	child, err := e.app.Sessions.Create(session.Header{Cwd: cwdA, ParentSession: ids[0], Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var seen []string
	var cursor *string
	pages := 0
	for {
		r, err := e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			t.Fatalf("session/list: %v", err)
		}
		pages++
		for i, s := range r.Sessions {
			seen = append(seen, string(s.SessionId))
			if s.UpdatedAt == nil {
				t.Fatalf("no updatedAt on %s", s.SessionId)
			}
			if i > 0 && *r.Sessions[i-1].UpdatedAt < *s.UpdatedAt {
				t.Errorf("not newest first: %s before %s", *r.Sessions[i-1].UpdatedAt, *s.UpdatedAt)
			}
		}
		if r.NextCursor == nil {
			break
		}
		cursor = r.NextCursor
	}
	if pages != 2 || len(seen) != len(ids) || slices.Contains(seen, child.ID()) {
		t.Errorf("pages=%d sessions=%d (want 2 pages, %d top-level sessions, no child)", pages, len(seen), len(ids))
	}
	slices.Sort(seen)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("paging lost or duplicated sessions")
	}

	r, err := e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Cwd: &cwdB})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sessions) != (len(ids))/2 {
		t.Errorf("cwd filter: %d sessions, want %d", len(r.Sessions), len(ids)/2)
	}
	for _, s := range r.Sessions {
		if s.Cwd != cwdB {
			t.Errorf("cwd filter returned %s", s.Cwd)
		}
	}

	r, err = e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Cwd: &cwdA, Meta: map[string]any{acp.MetaIncludeChildren: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Sessions, func(s acpsdk.SessionInfo) bool { return string(s.SessionId) == child.ID() }) {
		t.Errorf("includeChildren did not list the child")
	}

	_, err = e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Cursor: acpsdk.Ptr("not-a-cursor")})
	wantRPCError(t, err, -32602, "invalid cursor")
}

func TestCloseSessionReleasesIt(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, echoScript))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	if _, err := e.cs.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	if _, ok := e.app.Sessions.Get(id); ok {
		t.Errorf("session still live after close")
	}
	_, err := e.prompt(ctx, id, "hi")
	wantRPCError(t, err, -32002, "unknown session")
}

func TestUnadvertisedMethodsAreMethodNotFound(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil)
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	_, err := e.cs.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: acpsdk.SessionId(id), ConfigId: "x", Value: "y"}})
	// The mode is always a config option now: an unknown one is bad params.
	wantRPCError(t, err, -32602, `unknown config option "x" (available: mode)`)
	_, err = e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "x"})
	wantRPCError(t, err, -32602, "unknown mode")
	_, err = e.cs.CallExtension(ctx, "_acp-agent/nothing", map[string]any{})
	wantRPCError(t, err, -32601, "")
}

func wantRPCError(t *testing.T, err error, code int, contains string) {
	t.Helper()
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v, want a JSON-RPC error %d", err, code)
	}
	if re.Code != code || !strings.Contains(re.Message, contains) {
		t.Errorf("error = %d %q, want %d containing %q", re.Code, re.Message, code, contains)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func TestAutonomousTurnStreamsWithoutPrompt(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), loadScript(t, "model:\n  main:\n    - text: \"noticed the settlement\"\n"))
	e.initialize(ctx)
	id := e.newSession(ctx, tempCwd(t))
	ag, ok := e.app.Agents.Get(id)
	if !ok {
		t.Fatal("top-level agent not registered")
	}
	// A turn woken by something other than a prompt (like a subagent's
	// settlement notice) still streams on the session.
	if _, err := ag.Followup(session.Message{Content: []session.Block{session.Text("child settled")}, Source: session.Source{Kind: session.SourceSubagentSettled}}); err != nil {
		t.Fatal(err)
	}
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		return slices.Contains(transcript(ns), "agent_message_chunk noticed the settlement")
	}); err != nil {
		t.Fatalf("no autonomous update: %v; got %q", err, transcript(e.rec.snapshot(id)))
	}
}
