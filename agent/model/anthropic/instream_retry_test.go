package anthropic

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestInStreamErrorBeforeContentIsRetried: an overloaded or rate-limited
// error event before any content is retried with the backoff of the HTTP
// status, and each wait is a retry notice naming the error, never
// "HTTP 200"; the same event after content ends the call (the partial
// reply is the agent's to handle).
func TestInStreamErrorBeforeContentIsRetried(t *testing.T) {
	for _, tt := range []struct {
		name, file, why string
	}{
		{"overloaded", "overloaded-first.sse", "overloaded_error"},
		{"rate limited", "rate-limited-first.sse", "rate_limit_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, sse(t, tt.file), sse(t, tt.file), sse(t, "text.sse"))
			var mu sync.Mutex
			var notices []model.Notice
			req := userReq("hi")
			req.Notify = func(n model.Notice) {
				mu.Lock()
				defer mu.Unlock()
				notices = append(notices, n)
			}
			got, err := collect(newModel(t, r, nil), req)
			if err != nil || r.count() != 3 {
				t.Fatalf("err %v after %d requests, want an answer after 3", err, r.count())
			}
			if session.JoinText(textOf(got), "") == "" {
				t.Errorf("no text after the retries: %+v", got)
			}
			if len(notices) != 2 {
				t.Fatalf("notices %+v, want 2 retry notices", notices)
			}
			for _, n := range notices {
				if n.Kind != model.NoticeRetry || !strings.Contains(n.Message, tt.why) || strings.Contains(n.Message, "HTTP 200") {
					t.Errorf("notice %+v", n)
				}
			}
		})
	}
	t.Run("retries used up", func(t *testing.T) {
		r := newReplay(t, sse(t, "overloaded-first.sse"))
		_, err := collect(newModel(t, r, nil), userReq("hi"))
		if err == nil || r.count() != 4 || strings.Contains(err.Error(), "HTTP 200") || !strings.Contains(err.Error(), "after 4 attempts") {
			t.Fatalf("err %v after %d requests", err, r.count())
		}
	})
}

func textOf(cs []session.Chunk) []session.Block {
	var out []session.Block
	for _, c := range cs {
		if c.Type == session.ChunkText {
			out = append(out, session.Text(c.Text))
		}
	}
	return out
}

// TestThinkingBudgetValidated: a budget the API would refuse (under its
// minimum, or not below max tokens: 16384 with the default) is a
// configuration error naming the limits, not thinking silently dropped.
func TestThinkingBudgetValidated(t *testing.T) {
	for _, tt := range []struct {
		budget, maxTokens int
		ok                bool
	}{
		{0, 0, true}, {1024, 0, true}, {16383, 0, true},
		{16384, 0, false}, {20000, 0, false}, {500, 0, false},
		{20000, 32000, true},
	} {
		_, err := New(Config{Model: "claude-sonnet-4-5", APIKey: "k", ThinkingBudget: tt.budget, MaxTokens: tt.maxTokens})
		if (err == nil) != tt.ok {
			t.Errorf("budget %d, max %d: err %v, want ok=%v", tt.budget, tt.maxTokens, err, tt.ok)
		}
		if err != nil && (!errors.Is(err, model.ErrBadConfig) || !strings.Contains(err.Error(), "at least 1024")) {
			t.Errorf("budget %d: error %q is not a clear configuration error", tt.budget, err)
		}
	}
}
