package openai

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/sebdah/goldie/v2"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// roundTrip is a conversation with a tool-call round trip: the assistant
// calls two tools, both results come back, the assistant answers, and a
// later tool-free exchange follows.
func roundTrip() model.Request {
	text := session.Text
	return model.Request{
		Route:  model.Route{Model: "deepseek-reasoner"},
		System: "You are terse.",
		Messages: []model.Message{
			{Role: session.RoleUser, Content: []session.Block{
				text("Read go.mod and list agent/model."),
				{Type: session.BlockResourceLink, URI: "file:///w/README.md", MimeType: "text/markdown"},
				{Type: session.BlockResource, URI: "file:///w/notes.txt", Text: "remember: tests"},
			}},
			{Role: session.RoleAssistant, Content: []session.Block{
				{Type: session.BlockReasoning, Text: "Need both files."},
				text("Reading both."),
				{Type: session.BlockToolCall, ID: "call_a1", Name: "read_file", Arguments: `{"path": "go.mod"}`},
				{Type: session.BlockToolCall, ID: "call_b2", Name: "list_dir", Arguments: ``},
			}},
			{Role: model.RoleTool, Content: []session.Block{
				{Type: session.BlockToolResult, ToolCallID: "call_a1", Content: []session.Block{text("module x")}},
				{Type: session.BlockToolResult, ToolCallID: "call_b2", IsError: true, Content: []session.Block{text("Error: no such directory")}},
			}},
			{Role: session.RoleAssistant, Content: []session.Block{
				{Type: session.BlockReasoning, Text: "Both done."},
				text("go.mod declares module x."),
			}},
			{Role: session.RoleUser, Content: []session.Block{text("Thanks. Anything else?")}},
			{Role: session.RoleAssistant, Content: []session.Block{
				{Type: session.BlockReasoning, Text: "No tools this time."},
				text("No."),
			}},
			// An interrupted step that produced only reasoning is dropped.
			{Role: session.RoleAssistant, Content: []session.Block{{Type: session.BlockReasoning, Text: "hm"}}},
			{Role: session.RoleUser, Content: []session.Block{text("bye")}},
		},
		Tools: []model.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_dir", Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)},
		},
		MaxTokens: 1024,
	}
}

// TestRequestBody pins the JSON we send for each provider dialect against
// goldens in testdata (GOLDIE_UPDATE=1 go test ./agent/model/openai to
// regenerate after an intended change; review the diff).
func TestRequestBody(t *testing.T) {
	tests := []struct {
		name     string
		provider string
	}{
		// deepseek: max_tokens, reasoning_content echoed on the assistant
		// messages of the tool-calling stretch only.
		{"request-deepseek", ProviderDeepSeek},
		// openai: max_completion_tokens, reasoning never sent.
		{"request-openai", ProviderOpenAI},
		{"request-compatible", ProviderCompatible},
	}
	g := goldie.New(t, goldie.WithFixtureDir("testdata"), goldie.WithNameSuffix(".golden.json"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, sseFile(t, "text.sse"))
			cfg := r.config()
			cfg.Provider = tt.provider
			if _, err := collect(t, t.Context(), newModel(t, cfg), roundTrip()); err != nil {
				t.Fatal(err)
			}
			g.AssertJson(t, tt.name, r.body(t, 0))
			if h := r.header(0).Get("Authorization"); h != "Bearer test-key-0123456789" {
				t.Errorf("Authorization = %q", h)
			}
		})
	}
}

func TestRequestRoute(t *testing.T) {
	r := newReplay(t, sseFile(t, "text.sse"))
	m := newModel(t, r.config())
	tests := []struct {
		name      string
		route     model.Route
		wantModel string
		wantCode  Code
		wantIs    error
	}{
		{name: "default model", wantModel: "deepseek-chat"},
		{name: "child names a model", route: model.Route{Model: "deepseek-reasoner"}, wantModel: "deepseek-reasoner"},
		{name: "same provider named", route: model.Route{Provider: ProviderDeepSeek, Model: "deepseek-v4"}, wantModel: "deepseek-v4"},
		{name: "other provider without its key", route: model.Route{Provider: ProviderOpenAI, Model: "gpt-4.1"}, wantCode: CodeRoute, wantIs: ErrMissingKey},
		{name: "other compatible server", route: model.Route{Provider: ProviderCompatible, Model: "x"}, wantCode: CodeRoute},
		{name: "unknown provider", route: model.Route{Provider: "spawn", Model: "x"}, wantCode: CodeRoute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := r.requests()
			req := userReq("hi")
			req.Route = tt.route
			_, err := collect(t, t.Context(), m, req)
			if tt.wantCode != "" {
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.Code != tt.wantCode {
					t.Fatalf("error = %v, want code %s", err, tt.wantCode)
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("error = %v, want it to wrap %v", err, tt.wantIs)
				}
				if r.requests() != before {
					t.Errorf("a request was sent")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.body(t, before)["model"]; got != tt.wantModel {
				t.Errorf("model = %v, want %s", got, tt.wantModel)
			}
		})
	}
}

// TestNoAmbientKey checks that an openai-compatible server without a
// configured key gets no Authorization header, even with OPENAI_API_KEY in
// the process environment (which openai.NewClient would pick up).
func TestNoAmbientKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-ambient-must-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/")
	r := newReplay(t, sseFile(t, "text.sse"))
	cfg := r.config()
	cfg.Provider, cfg.APIKey, cfg.Getenv = ProviderCompatible, "", nil
	if _, err := collect(t, t.Context(), newModel(t, cfg), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if h := r.header(0).Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestRenderBlocks(t *testing.T) {
	tests := []struct {
		name string
		in   []session.Block
		want string
	}{
		{"empty", nil, ""},
		{"one text", []session.Block{session.Text("a")}, "a"},
		{"texts", []session.Block{session.Text("a"), session.Text("b")}, "a\n\nb"},
		{"link", []session.Block{{Type: session.BlockResourceLink, URI: "file:///x"}}, "Resource: file:///x"},
		{"resource", []session.Block{{Type: session.BlockResource, URI: "file:///x", MimeType: "text/plain", Text: "body"}}, "Resource: file:///x (text/plain)\nbody"},
		{"skips other blocks", []session.Block{{Type: session.BlockReasoning, Text: "r"}, session.Text("a")}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renderBlocks(tt.in, "\n\n"); got != tt.want {
				t.Errorf("renderBlocks = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBadRequest(t *testing.T) {
	r := newReplay(t, sseFile(t, "text.sse"))
	m := newModel(t, r.config())
	tests := []struct {
		name string
		req  model.Request
	}{
		{"unknown role", model.Request{Messages: []model.Message{{Role: "system"}}}},
		{"invalid schema", model.Request{Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := collect(t, t.Context(), m, tt.req)
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("error = %v, want ErrBadRequest", err)
			}
		})
	}
	if n := r.requests(); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}
