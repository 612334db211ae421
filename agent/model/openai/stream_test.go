package openai

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func userReq(text string) model.Request {
	return model.Request{Messages: []model.Message{{Role: session.RoleUser, Content: []session.Block{session.Text(text)}}}}
}

func TestStreamReplay(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []session.Chunk
	}{
		{
			name: "text only",
			file: "text.sse",
			want: []session.Chunk{
				{Type: session.ChunkText, Text: "Hello"},
				{Type: session.ChunkText, Text: ", wor"},
				{Type: session.ChunkText, Text: "ld!"},
				{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 21, OutputTokens: 4}},
				{Type: session.ChunkFinish, Finish: model.FinishStop},
			},
		},
		{
			name: "reasoning then text",
			file: "reasoning.sse",
			want: []session.Chunk{
				{Type: session.ChunkReasoning, Text: "The user"},
				{Type: session.ChunkReasoning, Text: " asks 2+2."},
				{Type: session.ChunkReasoning, Text: " \"Four\"\n"},
				{Type: session.ChunkText, Text: "2 + 2"},
				{Type: session.ChunkText, Text: " = 4."},
				{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 14, OutputTokens: 19, ReasoningTokens: 12}},
				{Type: session.ChunkFinish, Finish: model.FinishStop},
			},
		},
		{
			name: "two parallel tool calls split across chunks",
			file: "tools.sse",
			want: []session.Chunk{
				{Type: session.ChunkText, Text: "Reading both."},
				{Type: session.ChunkToolCall, Index: 0, ID: "call_a1", Name: "read_file"},
				{Type: session.ChunkToolCall, Index: 0, Arguments: `{"`},
				{Type: session.ChunkToolCall, Index: 0, Arguments: `path`},
				{Type: session.ChunkToolCall, Index: 1, ID: "call_b2", Name: "list_dir", Arguments: `{"di`},
				{Type: session.ChunkToolCall, Index: 0, Arguments: `": "go`},
				{Type: session.ChunkToolCall, Index: 1, Arguments: `r": `},
				{Type: session.ChunkToolCall, Index: 0, Arguments: `.mod"}`},
				{Type: session.ChunkToolCall, Index: 1, Arguments: `"agent`},
				{Type: session.ChunkToolCall, Index: 1, Arguments: `/model"}`},
				{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 130, OutputTokens: 41}},
				{Type: session.ChunkFinish, Finish: model.FinishToolCalls},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, sseFile(t, tt.file))
			got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
			if err != nil {
				t.Fatalf("Stream error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chunks:\n got %+v\nwant %+v", got, tt.want)
			}
			if n := r.requests(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

// TestToolArgumentsAssemble checks the property the loop relies on:
// concatenating the argument fragments per index gives valid JSON.
func TestToolArgumentsAssemble(t *testing.T) {
	r := newReplay(t, sseFile(t, "tools.sse"))
	got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	args := map[int]string{}
	ids := map[int]string{}
	for _, c := range got {
		if c.Type == session.ChunkToolCall {
			args[c.Index] += c.Arguments
			ids[c.Index] += c.ID
		}
	}
	want := map[int]string{0: `{"path": "go.mod"}`, 1: `{"dir": "agent/model"}`}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("assembled arguments = %v, want %v", args, want)
	}
	if ids[0] != "call_a1" || ids[1] != "call_b2" {
		t.Errorf("ids = %v", ids)
	}
}

func TestStreamErrors(t *testing.T) {
	cut := readTestdata(t, "cut.sse")
	wantCutChunks := []session.Chunk{
		{Type: session.ChunkText, Text: "Part"},
		{Type: session.ChunkText, Text: "ial ans"},
		{Type: session.ChunkToolCall, Index: 0, ID: "call_x", Name: "read_file", Arguments: `{"pa`},
	}
	const unauthorized = `{"error":{"message":"Authentication Fails, Your api key: ****6789 is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}`
	tests := []struct {
		name         string
		handlers     []http.HandlerFunc
		maxRetries   int
		wantChunks   []session.Chunk
		wantCode     Code
		wantStatus   int
		wantRequests int
		wantInErr    []string
	}{
		{
			name:         "401 names provider and key variable",
			handlers:     []http.HandlerFunc{status(401, nil, unauthorized)},
			wantCode:     CodeAuth,
			wantStatus:   401,
			wantRequests: 1,
			wantInErr:    []string{"deepseek", "API key missing or rejected", "DEEPSEEK_API_KEY"},
		},
		{
			name:         "403 without a JSON body",
			handlers:     []http.HandlerFunc{status(403, nil, "forbidden")},
			wantCode:     CodeAuth,
			wantStatus:   403,
			wantRequests: 1,
			wantInErr:    []string{"deepseek", "DEEPSEEK_API_KEY"},
		},
		{
			name:         "400 is not retried",
			handlers:     []http.HandlerFunc{status(400, nil, `{"error":{"message":"Model Not Exist","type":"invalid_request_error","code":"invalid_model"}}`)},
			wantCode:     CodeRejected,
			wantStatus:   400,
			wantRequests: 1,
			wantInErr:    []string{"Model Not Exist", "invalid_model"},
		},
		{
			name:         "429 until retries run out",
			handlers:     []http.HandlerFunc{status(429, map[string]string{"Retry-After": "0"}, `{"error":{"message":"slow down","type":"rate_limit"}}`)},
			maxRetries:   2,
			wantCode:     CodeRateLimited,
			wantStatus:   429,
			wantRequests: 3,
			wantInErr:    []string{"rate limited", "after 3 attempts"},
		},
		{
			name:         "503 until retries run out, default bound",
			handlers:     []http.HandlerFunc{status(503, nil, `{"error":{"message":"overloaded"}}`)},
			wantCode:     CodeUnavailable,
			wantStatus:   503,
			wantRequests: 4,
			wantInErr:    []string{"after 4 attempts"},
		},
		{
			name:         "Retry-After longer than the cap fails at once",
			handlers:     []http.HandlerFunc{status(429, map[string]string{"Retry-After": "3600"}, `{}`)},
			wantCode:     CodeRateLimited,
			wantStatus:   429,
			wantRequests: 1,
			wantInErr:    []string{"wait 1h0m0s"},
		},
		{
			name:         "connection dropped mid-stream",
			handlers:     []http.HandlerFunc{sseTruncated(cut)},
			wantChunks:   wantCutChunks,
			wantCode:     CodeStreamCut,
			wantStatus:   200,
			wantRequests: 1,
			wantInErr:    []string{"stream cut"},
		},
		{
			name:         "clean end without a finish reason",
			handlers:     []http.HandlerFunc{sseBytes(firstEvents(cut, 3))},
			wantChunks:   wantCutChunks,
			wantCode:     CodeStreamCut,
			wantStatus:   200,
			wantRequests: 1,
		},
		{
			name: "in-band error event",
			handlers: []http.HandlerFunc{sseBytes(append(firstEvents(cut, 1),
				"data: {\"error\":{\"message\":\"upstream overloaded\"}}\n\n"...))},
			wantChunks:   wantCutChunks[:1],
			wantCode:     CodeStreamError,
			wantStatus:   200,
			wantRequests: 1,
			wantInErr:    []string{"upstream overloaded"},
		},
		{
			name:         "chunk that is not JSON",
			handlers:     []http.HandlerFunc{sseBytes(append(firstEvents(cut, 1), "data: {nope\n\n"...))},
			wantChunks:   wantCutChunks[:1],
			wantCode:     CodeStreamError,
			wantStatus:   200,
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.handlers...)
			cfg := r.config()
			cfg.MaxRetries = tt.maxRetries
			got, err := collect(t, t.Context(), newModel(t, cfg), userReq("hi"))
			if !reflect.DeepEqual(got, tt.wantChunks) {
				t.Errorf("chunks before the error:\n got %+v\nwant %+v", got, tt.wantChunks)
			}
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v (%T), want *ProviderError", err, err)
			}
			if pe.Code != tt.wantCode || pe.Status != tt.wantStatus || pe.Provider != ProviderDeepSeek {
				t.Errorf("ProviderError{Code:%s Status:%d Provider:%s}, want {%s %d deepseek}", pe.Code, pe.Status, pe.Provider, tt.wantCode, tt.wantStatus)
			}
			if n := r.requests(); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			for _, s := range tt.wantInErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "6789") {
				t.Errorf("error %q leaks part of the key", err)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	tests := []struct {
		name  string
		first http.HandlerFunc
	}{
		{"429 with Retry-After seconds", status(429, map[string]string{"Retry-After": "0"}, `{"error":{"message":"rate"}}`)},
		{"429 with Retry-After date in the past", status(429, map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, `{}`)},
		{"502 with backoff", status(502, nil, "bad gateway")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.first, sseFile(t, "text.sse"))
			got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
			if err != nil {
				t.Fatalf("Stream error: %v", err)
			}
			if n := r.requests(); n != 2 {
				t.Errorf("requests = %d, want 2", n)
			}
			if len(got) != 5 || got[4].Finish != model.FinishStop {
				t.Errorf("chunks = %+v", got)
			}
			// The retry re-sends the same body.
			if a, b := r.body(t, 0), r.body(t, 1); !reflect.DeepEqual(a, b) {
				t.Errorf("retry body differs:\n%v\n%v", a, b)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	text := readTestdata(t, "text.sse")
	tests := []struct {
		name string
		// handler blocks until the client goes away; started is closed
		// once it has written what it writes.
		handler func(started chan<- struct{}) http.HandlerFunc
		// cancelAfter cancels once this many chunks were received (0:
		// when the server signals started).
		cancelAfter int
		wantChunks  int
	}{
		{
			name: "before response headers",
			handler: func(started chan<- struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					close(started)
					<-r.Context().Done()
				}
			},
		},
		{
			name: "mid-stream",
			handler: func(started chan<- struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = w.Write(firstEvents(text, 2))
					w.(http.Flusher).Flush()
					close(started)
					<-r.Context().Done()
				}
			},
			cancelAfter: 1,
			wantChunks:  1,
		},
		{
			name: "while waiting to retry",
			handler: func(started chan<- struct{}) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					status(429, map[string]string{"Retry-After": "50"}, `{}`)(w, r)
					close(started)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{})
			r := newReplay(t, tt.handler(started))
			cause := errors.New("user pressed stop")
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if tt.cancelAfter == 0 {
				go func() {
					<-started
					cancel(cause)
				}()
			}
			var got []session.Chunk
			var err error
			for ck, e := range newModel(t, r.config()).Stream(ctx, userReq("hi")) {
				if e != nil {
					err = e
					break
				}
				got = append(got, ck)
				if len(got) == tt.cancelAfter {
					cancel(cause)
				}
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
				t.Errorf("error = %v, want one wrapping context.Canceled and the cause", err)
			}
			if len(got) != tt.wantChunks {
				t.Errorf("chunks = %+v, want %d", got, tt.wantChunks)
			}
			if n := r.requests(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

// TestEarlyBreak checks that stopping the iteration releases the HTTP
// request: the server sees its client go away.
func TestEarlyBreak(t *testing.T) {
	text := readTestdata(t, "text.sse")
	gone := make(chan struct{})
	r := newReplay(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(firstEvents(text, 2))
		w.(http.Flusher).Flush()
		<-req.Context().Done()
		close(gone)
	})
	for ck, err := range newModel(t, r.config()).Stream(t.Context(), userReq("hi")) {
		if err != nil || ck.Text != "Hello" {
			t.Fatalf("first item = %+v, %v", ck, err)
		}
		break
	}
	<-gone
}

// TestDialects covers server variations seen in OpenAI-compatible servers.
func TestDialects(t *testing.T) {
	ev := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}` + "\n\n"
	}
	tests := []struct {
		name string
		sse  string
		want []session.Chunk
	}{
		{
			name: "reasoning field (vLLM, OpenRouter), non-string ignored",
			sse:  ev(`{"reasoning":"think"}`, "") + ev(`{"reasoning":{"effort":"high"},"content":"x"}`, "stop"),
			want: []session.Chunk{
				{Type: session.ChunkReasoning, Text: "think"},
				{Type: session.ChunkText, Text: "x"},
				{Type: session.ChunkFinish, Finish: model.FinishStop},
			},
		},
		{
			name: "tool calls without index, finish stop, repeated id and name",
			sse: ev(`{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}`, "") +
				ev(`{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{"}}]}`, "") +
				ev(`{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"}"}}]}`, "stop"),
			want: []session.Chunk{
				{Type: session.ChunkToolCall, Index: 0, ID: "a", Name: "f", Arguments: "{}"},
				{Type: session.ChunkToolCall, Index: 1, ID: "b", Name: "g", Arguments: "{"},
				{Type: session.ChunkToolCall, Index: 1, Arguments: "}"},
				{Type: session.ChunkFinish, Finish: model.FinishToolCalls},
			},
		},
		{
			name: "length",
			sse:  ev(`{"content":"a"}`, "length"),
			want: []session.Chunk{{Type: session.ChunkText, Text: "a"}, {Type: session.ChunkFinish, Finish: model.FinishLength}},
		},
		{
			name: "content filter",
			sse:  ev(`{"refusal":"no"}`, "content_filter"),
			want: []session.Chunk{{Type: session.ChunkText, Text: "no"}, {Type: session.ChunkFinish, Finish: model.FinishContentFilter}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, sseBytes([]byte(tt.sse+"data: [DONE]\n\n")))
			got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chunks:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestToolIndexBounded checks a hostile index fails the stream instead of
// allocating.
func TestToolIndexBounded(t *testing.T) {
	r := newReplay(t, sseBytes([]byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":99999999,"id":"a"}]}}]}`+"\n\n")))
	_, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != CodeStreamError {
		t.Errorf("error = %v, want CodeStreamError", err)
	}
}
