package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

const anthropicScenario = `
description: |
  The Anthropic provider, keyless: the real composition with
  --model anthropic/claude-sonnet-4-5 against a loopback server replaying
  recorded Messages API streams. Thinking is shown as thought chunks and
  sent back signed; the todo call runs; a restart and load replay it all.
steps:
  - initialize
  - new_session
  - prompt: Plan the work, then reply PLANNED.
  - restart
  - initialize
  - load_session: main
`

// TestAnthropicReplayScenario runs a scenario through the Anthropic
// provider against replayed SSE streams (no key, no network).
func TestAnthropicReplayScenario(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	streams := []string{"anthropic-1.sse", "anthropic-2.sse"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		if r.URL.Path != "/v1/messages" || n >= len(streams) {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", streams[n]))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(b)
	}))
	defer srv.Close()

	factory := func(_ context.Context, cfg Config) (System, error) {
		a, err := app.New(app.Config{
			DataDir: cfg.DataDir,
			Sources: cfg.Sources,
			Version: "scenario",
			Logger:  cfg.Logger,
			Model:   "anthropic/claude-sonnet-4-5",
			BaseURL: srv.URL,
			Getenv: func(k string) string {
				return map[string]string{"ANTHROPIC_API_KEY": "replay-key", app.EnvThinkingBudget: "1024"}[k]
			},
			Prompt:     app.DeterministicPrompt(),
			DigestSync: true,
			Testing:    &testhooks.Hooks{WrapModel: cfg.ObserveModel, NoSync: true, PanicOnBug: true},
		})
		if err != nil {
			return nil, err
		}
		return appSystem{a}, nil
	}
	sc, err := Parse("anthropic.yaml", "anthropic-replay", []byte(anthropicScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeoutCause(t.Context(), 2*time.Minute, errors.New("scenario did not finish within 2 minutes"))
	defer cancel()
	rec, err := Record(ctx, sc, factory, t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	wire := string(rec.Wire)
	for _, want := range []string{`"agent_thought_chunk"`, `A plan first, with the todo tool.`, `"plan"`, `Read the code`, `PLANNED`, `"stopReason":"end_turn"`} {
		if !strings.Contains(wire, want) {
			t.Errorf("wire lacks %s", want)
		}
	}
	// The log keeps the signature and the cache usage.
	for _, want := range []string{`"signature":"c2lnbmF0dXJlLW9uZQ=="`, `"cacheReadTokens":3000`, `"cacheWriteTokens":2100`} {
		if !bytes.Contains(rec.Sessions, []byte(want)) {
			t.Errorf("session log lacks %s", want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	var second struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(bodies[1], &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Messages) != 3 || !bytes.Contains(second.Messages[1].Content[0], []byte(`"signature":"c2lnbmF0dXJlLW9uZQ=="`)) {
		t.Errorf("second request did not send the signed thinking back: %s", bodies[1])
	}
	// The cached prefix: the first request's messages lead the second's.
	var first struct {
		Messages []json.RawMessage `json:"messages"`
		System   json.RawMessage   `json:"system"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var next struct {
		Messages []json.RawMessage `json:"messages"`
		System   json.RawMessage   `json:"system"`
		Tools    json.RawMessage   `json:"tools"`
	}
	_ = json.Unmarshal(bodies[0], &first)
	_ = json.Unmarshal(bodies[1], &next)
	if !bytes.Equal(first.System, next.System) || !bytes.Equal(first.Tools, next.Tools) || !bytes.Equal(first.Messages[0], next.Messages[0]) {
		t.Errorf("request prefix changed between turns")
	}
}
