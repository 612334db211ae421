package anthropic

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// stall writes head (nil: not even the headers) and then sends nothing
// until the client goes away, so only the idle timeout can end it.
func stall(head []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if head != nil {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(head)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

// TestIdleTimeout: --idle-timeout reaches Anthropic streams. A stall
// before any content is retried with a retry notice; a stall after
// content ends the call with PROVIDER_IDLE_TIMEOUT, which is
// model.ErrStreamBroken (the agent retries it without the partial reply).
func TestIdleTimeout(t *testing.T) {
	cut, err := os.ReadFile(filepath.Join("testdata", "cut.sse"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		first    http.HandlerFunc
		wantErr  bool
		wantReqs int
		notices  int
	}{
		{"before headers, then success", stall(nil), false, 2, 1},
		{"after headers before content, then success", stall([]byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")), false, 2, 1},
		{"mid-stream ends the call", stall(cut), true, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplay(t, tt.first, sse(t, "text.sse"))
			m := newModel(t, r, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
			var notices []model.Notice
			req := userReq("hi")
			req.Notify = func(n model.Notice) { notices = append(notices, n) }
			chunks, err := collect(m, req)
			if (err != nil) != tt.wantErr || r.count() != tt.wantReqs || len(notices) != tt.notices {
				t.Fatalf("err %v, %d requests, notices %+v", err, r.count(), notices)
			}
			for _, n := range notices {
				if !strings.Contains(n.Message, "no data from the provider") {
					t.Errorf("notice %q", n.Message)
				}
			}
			if tt.wantErr {
				if !errcode.Has(err, model.ProviderIdleTimeout) || !errors.Is(err, model.ErrStreamBroken) || len(chunks) == 0 {
					t.Errorf("err %v after %d chunks, want PROVIDER_IDLE_TIMEOUT, a broken stream, after the partial text", err, len(chunks))
				}
			}
		})
	}
}
