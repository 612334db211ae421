package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// replay is a loopback Messages API: request i gets handler i (the last
// repeats); bodies and headers are recorded.
type replay struct {
	srv      *httptest.Server
	handlers []http.HandlerFunc
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
}

func newReplay(t testing.TB, handlers ...http.HandlerFunc) *replay {
	t.Helper()
	r := &replay{handlers: handlers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.bodies)
		r.bodies = append(r.bodies, body)
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		if req.URL.Path != "/v1/messages" {
			http.Error(w, "unexpected path "+req.URL.Path, http.StatusNotFound)
			return
		}
		r.handlers[min(n, len(r.handlers)-1)](w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replay) body(t *testing.T, i int) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.bodies) {
		t.Fatalf("request %d not received (have %d)", i, len(r.bodies))
	}
	var v map[string]any
	if err := json.Unmarshal(r.bodies[i], &v); err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	return v
}

func (r *replay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func sse(t testing.TB, name string) http.HandlerFunc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}
}

func apiError(status int, typ, msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`))
	}
}

func newModel(t testing.TB, r *replay, mod func(*Config)) *Model {
	t.Helper()
	cfg := Config{Model: "claude-sonnet-4-5", BaseURL: r.srv.URL, APIKey: "sk-ant-test-secret", RetryBase: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func collect(m model.Model, req model.Request) ([]session.Chunk, error) {
	var out []session.Chunk
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func userReq(text string) model.Request {
	return model.Request{System: "You are a test.", Messages: []model.Message{{Role: session.RoleUser, Content: []session.Block{session.Text(text)}}}}
}

func TestStream_Text(t *testing.T) {
	r := newReplay(t, sse(t, "text.sse"))
	got, err := collect(newModel(t, r, nil), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Chunk{
		{Type: session.ChunkText, Text: "Hello"},
		{Type: session.ChunkText, Text: ", world."},
		{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 25, OutputTokens: 15}},
		{Type: session.ChunkFinish, Finish: model.FinishStop},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks\n%+v\nwant\n%+v", got, want)
	}
	h := r.headers[0]
	// The SDK sends the key as a bearer token (its WithAPIKey).
	if h.Get("Authorization") != "Bearer sk-ant-test-secret" || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", h)
	}
	b := r.body(t, 0)
	if b["stream"] != true || b["model"] != "claude-sonnet-4-5" || b["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("body %v", b)
	}
	sys := b["system"].([]any)[0].(map[string]any)
	if sys["text"] != "You are a test." || sys["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("system %v: want the prompt with a cache_control breakpoint", sys)
	}
	if b["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("no request-level cache_control (the last stable message's breakpoint): %v", b)
	}
}

// TestStream_ThinkingAndToolUseAcrossTurns: thinking streams as reasoning
// with its signature, the tool call streams its JSON, and the second
// request sends the signed thinking, the text, the tool use and the tool
// result back as the API requires; the second answer's redacted thinking
// and cache usage come through.
func TestStream_ThinkingAndToolUseAcrossTurns(t *testing.T) {
	r := newReplay(t, sse(t, "thinking-tool-1.sse"), sse(t, "thinking-tool-2.sse"))
	m := newModel(t, r, func(c *Config) { c.ThinkingBudget = 2048 })
	tools := []model.ToolSpec{{Name: "get_weather", Description: "Weather for a place.", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)}}
	req := userReq("weather in SF?")
	req.Tools = tools
	got, err := collect(m, req)
	if err != nil {
		t.Fatal(err)
	}
	sig := "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
	want := []session.Chunk{
		{Type: session.ChunkReasoning, Text: "The user wants the weather. "},
		{Type: session.ChunkReasoning, Text: "I should call the tool."},
		{Type: session.ChunkReasoning, Signature: sig},
		{Type: session.ChunkText, Text: "Let me check."},
		{Type: session.ChunkToolCall, Index: 0, ID: "toolu_01", Name: "get_weather"},
		{Type: session.ChunkToolCall, Index: 0, Arguments: `{"location": "San Fra`},
		{Type: session.ChunkToolCall, Index: 0, Arguments: `ncisco"}`},
		{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 400, OutputTokens: 89}},
		{Type: session.ChunkFinish, Finish: model.FinishToolCalls},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("turn 1 chunks\n%+v\nwant\n%+v", got, want)
	}
	if th := r.body(t, 0)["thinking"].(map[string]any); th["type"] != "enabled" || th["budget_tokens"] != float64(2048) {
		t.Errorf("thinking config %v", th)
	}

	// The agent loop's record of turn 1, then the tool result.
	req.Messages = append(req.Messages,
		model.Message{Role: session.RoleAssistant, Content: []session.Block{
			{Type: session.BlockReasoning, Text: "The user wants the weather. I should call the tool.", Signature: sig},
			session.Text("Let me check."),
			{Type: session.BlockToolCall, ID: "toolu_01", Name: "get_weather", Arguments: `{"location": "San Francisco"}`},
		}},
		model.Message{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "toolu_01", Content: []session.Block{session.Text("18C, sunny")}}}},
	)
	got, err = collect(m, req)
	if err != nil {
		t.Fatal(err)
	}
	want = []session.Chunk{
		{Type: session.ChunkReasoning, Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
		{Type: session.ChunkText, Text: "It is 18 degrees and sunny in San Francisco."},
		{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 550, OutputTokens: 20, CacheReadTokens: 400, CacheWriteTokens: 120}},
		{Type: session.ChunkFinish, Finish: model.FinishStop},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("turn 2 chunks\n%+v\nwant\n%+v", got, want)
	}
	msgs := r.body(t, 1)["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("turn 2 sent %d messages: %v", len(msgs), msgs)
	}
	asst := msgs[1].(map[string]any)["content"].([]any)
	thinking := asst[0].(map[string]any)
	if asst := msgs[1].(map[string]any); asst["role"] != "assistant" {
		t.Fatalf("message 1 %v", asst)
	}
	if thinking["type"] != "thinking" || thinking["signature"] != sig || thinking["thinking"] != "The user wants the weather. I should call the tool." {
		t.Errorf("thinking sent back as %v", thinking)
	}
	use := asst[2].(map[string]any)
	if use["type"] != "tool_use" || use["id"] != "toolu_01" || use["input"].(map[string]any)["location"] != "San Francisco" {
		t.Errorf("tool use sent back as %v", use)
	}
	res := msgs[2].(map[string]any)
	block := res["content"].([]any)[0].(map[string]any)
	if res["role"] != "user" || block["type"] != "tool_result" || block["tool_use_id"] != "toolu_01" {
		t.Errorf("tool result sent as %v", res)
	}
}

// TestStream_Errors: each error class gets the shared code; retryable
// classes are retried, the others are not; the key never shows.
func TestStream_Errors(t *testing.T) {
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		code     Code
		requests int
		chunks   int
	}{
		{"auth", []http.HandlerFunc{apiError(401, "authentication_error", "invalid x-api-key sk-ant-test-secret")}, CodeAuth, 1, 0},
		{"rate limited, retries used up", []http.HandlerFunc{apiError(429, "rate_limit_error", "slow down")}, CodeRateLimited, 4, 0},
		{"overloaded, retries used up", []http.HandlerFunc{apiError(529, "overloaded_error", "Overloaded")}, CodeUnavailable, 4, 0},
		{"context length", []http.HandlerFunc{apiError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")}, CodeContextLength, 1, 0},
		{"bad request", []http.HandlerFunc{apiError(400, "invalid_request_error", "messages: field required")}, CodeRejected, 1, 0},
		{"overloaded in the stream", []http.HandlerFunc{sse(t, "overloaded-event.sse")}, CodeUnavailable, 1, 1},
		{"stream cut", []http.HandlerFunc{sse(t, "cut.sse")}, CodeStreamCut, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.handlers...)
			chunks, err := collect(newModel(t, r, nil), userReq("hi"))
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != tt.code {
				t.Fatalf("err %v, want code %s", err, tt.code)
			}
			if !errcode.Has(err, tt.code) {
				t.Errorf("errcode.Has(%s) false", tt.code)
			}
			if r.count() != tt.requests || len(chunks) != tt.chunks {
				t.Errorf("%d requests, %d chunks; want %d, %d", r.count(), len(chunks), tt.requests, tt.chunks)
			}
			if msg := err.Error(); strings.Contains(msg, "sk-ant-test-secret") {
				t.Errorf("error shows the key: %s", msg)
			}
		})
	}
}

// TestStream_RetryThenSuccess: a 529 then a good stream is one answer.
func TestStream_RetryThenSuccess(t *testing.T) {
	r := newReplay(t, apiError(529, "overloaded_error", "Overloaded"), sse(t, "text.sse"))
	got, err := collect(newModel(t, r, nil), userReq("hi"))
	if err != nil || r.count() != 2 || len(got) != 4 {
		t.Fatalf("err %v, %d requests, %d chunks", err, r.count(), len(got))
	}
}

func TestNew_MissingKey(t *testing.T) {
	_, err := New(Config{Model: "claude-sonnet-4-5", Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrMissingKey) {
		t.Fatalf("err %v", err)
	}
	if _, err := New(Config{Model: "claude-sonnet-4-5", Getenv: func(k string) string { return map[string]string{EnvAPIKey: "k"}[k] }}); err != nil {
		t.Fatalf("key from %s: %v", EnvAPIKey, err)
	}
}
