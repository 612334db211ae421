package openai

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/idle"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// stall answers nothing until the client goes away. headers selects a
// stall after the response headers and the first events.
func stall(headers []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if headers != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(headers)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

// TestIdleTimeout: a provider that stops sending ends the attempt. Before
// any chunk was delivered the attempt is retried (and the person is told);
// after a chunk it ends the call with PROVIDER_IDLE_TIMEOUT. The stalling
// handlers block until the client gives up, so only the timeout can end
// them: the outcome does not depend on timing.
func TestIdleTimeout(t *testing.T) {
	text := readTestdata(t, "text.sse")
	tests := []struct {
		name       string
		handlers   []http.HandlerFunc
		maxRetries int
		wantErr    bool
		wantChunks int
		wantReqs   int
		notices    int
	}{
		{"before headers, then success", []http.HandlerFunc{stall(nil), sseBytes(text)}, 0, false, 5, 2, 1},
		{"after headers before a chunk, then success", []http.HandlerFunc{stall([]byte(": keepalive\n\n")), sseBytes(text)}, 0, false, 5, 2, 1},
		{"mid-stream is not retried", []http.HandlerFunc{stall(firstEvents(text, 2)), sseBytes(text)}, 0, true, 1, 1, 0},
		{"retries used up", []http.HandlerFunc{stall(nil)}, -1, true, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.handlers...)
			cfg := r.config()
			// Long enough that a loaded machine (race detector, parallel
			// builds) still answers the healthy attempt well within it; the
			// stalled attempts end only by the timeout whatever its length.
			cfg.IdleTimeout = 500 * time.Millisecond
			cfg.MaxRetries = tt.maxRetries
			var notices []model.Notice
			req := userReq("hi")
			req.Notify = func(n model.Notice) { notices = append(notices, n) }
			got, err := collect(t, t.Context(), newModel(t, cfg), req)
			if tt.wantErr {
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.Code != CodeIdleTimeout || !errcode.Has(err, CodeIdleTimeout) {
					t.Fatalf("error = %v, want %s", err, CodeIdleTimeout)
				}
				if !errors.Is(err, idle.ErrIdle) {
					t.Errorf("error %v does not wrap the idle cause", err)
				}
			} else if err != nil {
				t.Fatalf("Stream error: %v", err)
			}
			if len(got) != tt.wantChunks {
				t.Errorf("chunks = %+v, want %d", got, tt.wantChunks)
			}
			if n := r.requests(); n != tt.wantReqs {
				t.Errorf("requests = %d, want %d", n, tt.wantReqs)
			}
			if len(notices) != tt.notices {
				t.Fatalf("notices = %+v, want %d", notices, tt.notices)
			}
			for _, n := range notices {
				if n.Kind != model.NoticeRetry || n.Attempt != 1 || !strings.Contains(n.Message, "no data from the provider") {
					t.Errorf("notice = %+v", n)
				}
			}
		})
	}
}

// TestRetryNotice: each retry wait is announced with the status and the
// wait, before the wait.
func TestRetryNotice(t *testing.T) {
	r := newReplay(t,
		status(429, map[string]string{"Retry-After": "0"}, `{}`),
		status(503, nil, `{}`),
		sseFile(t, "text.sse"))
	var notices []model.Notice
	req := userReq("hi")
	req.Notify = func(n model.Notice) { notices = append(notices, n) }
	if _, err := collect(t, t.Context(), newModel(t, r.config()), req); err != nil {
		t.Fatal(err)
	}
	if len(notices) != 2 {
		t.Fatalf("notices = %+v, want 2", notices)
	}
	if n := notices[0]; n.Status != 429 || n.Attempt != 1 || n.Message != "retrying in 0 ms (HTTP 429)" {
		t.Errorf("first notice = %+v", n)
	}
	if n := notices[1]; n.Status != 503 || n.Attempt != 2 || !strings.HasSuffix(n.Message, "(HTTP 503)") {
		t.Errorf("second notice = %+v", n)
	}
}

func TestRetryMessage(t *testing.T) {
	tests := []struct {
		pe   ProviderError
		d    time.Duration
		want string
	}{
		{ProviderError{Status: 429, Coded: errcode.Coded[Code]{Code: CodeRateLimited}}, 4 * time.Second, "retrying in 4 s (HTTP 429)"},
		{ProviderError{Status: 502, Coded: errcode.Coded[Code]{Code: CodeUnavailable}}, 1600 * time.Millisecond, "retrying in 2 s (HTTP 502)"},
		{ProviderError{Coded: errcode.Coded[Code]{Code: CodeTransport}}, 250 * time.Millisecond, "retrying in 250 ms (no response)"},
		{ProviderError{Coded: errcode.Coded[Code]{Code: CodeIdleTimeout}}, 3 * time.Second, "retrying in 3 s (no data from the provider)"},
	}
	for _, tt := range tests {
		if got := RetryMessage(&tt.pe, tt.d); got != tt.want {
			t.Errorf("RetryMessage(%v, %s) = %q, want %q", tt.pe.Code, tt.d, got, tt.want)
		}
	}
}

// TestContextLengthClassified: the provider's "does not fit" refusal gets
// its own code (it triggers compaction), other 400s stay rejected.
func TestContextLengthClassified(t *testing.T) {
	tests := []struct {
		body string
		want Code
	}{
		{`{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`, CodeContextLength},
		{`{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens","type":"invalid_request_error","code":"invalid_request_error"}}`, CodeContextLength},
		{`{"error":{"message":"bad tool schema","code":"invalid_request_error"}}`, CodeRejected},
	}
	for _, tt := range tests {
		r := newReplay(t, status(400, nil, tt.body))
		_, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
		if !errcode.Has(err, tt.want) {
			t.Errorf("body %s: error %v, want code %q", tt.body, err, tt.want)
		}
		if r.requests() != 1 {
			t.Errorf("a 400 was retried")
		}
	}
}

// TestCachedUsage: DeepSeek's and OpenAI's cached-token counts land in the
// provider-neutral usage.
func TestCachedUsage(t *testing.T) {
	for _, u := range []string{
		`{"prompt_tokens":100,"completion_tokens":5,"prompt_cache_hit_tokens":60,"prompt_cache_miss_tokens":40}`,
		`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":60}}`,
	} {
		body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}],\"usage\":" + u + "}\n\ndata: [DONE]\n\n"
		r := newReplay(t, sseBytes([]byte(body)))
		got, err := collect(t, t.Context(), newModel(t, r.config()), userReq("hi"))
		if err != nil {
			t.Fatal(err)
		}
		var usage *session.Usage
		for _, c := range got {
			if c.Type == session.ChunkUsage {
				usage = c.Usage
			}
		}
		if usage == nil || *usage != (session.Usage{InputTokens: 100, OutputTokens: 5, CacheReadTokens: 60}) {
			t.Errorf("usage %s -> %+v", u, usage)
		}
	}
}
