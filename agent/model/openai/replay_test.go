package openai

// This file holds the loopback replay server the tests and the benchmark
// use: each request gets the next handler in its list (the last repeats),
// and every request body is recorded.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

type replay struct {
	srv      *httptest.Server
	handlers []http.HandlerFunc

	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func newReplay(t testing.TB, handlers ...http.HandlerFunc) *replay {
	t.Helper()
	r := &replay{handlers: handlers}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	if req.URL.Path != "/chat/completions" {
		http.Error(w, "unexpected path "+req.URL.Path, http.StatusNotFound)
		return
	}
	r.handlers[min(n, len(r.handlers)-1)](w, req)
}

func (r *replay) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// body returns request i decoded as generic JSON.
func (r *replay) body(t *testing.T, i int) map[string]any {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.bodies) {
		t.Fatalf("request %d not received (have %d)", i, len(r.bodies))
	}
	var v map[string]any
	if err := json.Unmarshal(r.bodies[i], &v); err != nil {
		t.Fatalf("request %d: %v\n%s", i, err, r.bodies[i])
	}
	return v
}

func (r *replay) header(i int) http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers[i]
}

// config returns a deepseek config pointed at the replay server, with fast
// retries and no access to the real environment.
func (r *replay) config() Config {
	return Config{
		Provider:   ProviderDeepSeek,
		Model:      "deepseek-chat",
		BaseURL:    r.srv.URL,
		APIKey:     "test-key-0123456789",
		HTTPClient: r.srv.Client(),
		RetryBase:  time.Microsecond,
		Getenv:     func(string) string { return "" },
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sseBytes serves b as an event stream.
func sseBytes(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	}
}

func sseFile(t testing.TB, name string) http.HandlerFunc {
	return sseBytes(readTestdata(t, name))
}

// sseTruncated declares a longer body than it sends, so the server drops
// the connection mid-stream and the client sees an unexpected EOF.
func sseTruncated(b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)+4096))
		_, _ = w.Write(b)
	}
}

func status(code int, hdr map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// collect drains a stream, returning its chunks and its error (if any).
func collect(t testing.TB, ctx context.Context, m model.Model, req model.Request) ([]session.Chunk, error) {
	t.Helper()
	var out []session.Chunk
	for ck, err := range m.Stream(ctx, req) {
		if err != nil {
			return out, err
		}
		out = append(out, ck)
	}
	return out, nil
}

func newModel(t testing.TB, cfg Config) model.Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// events splits an SSE body after its first n events.
func firstEvents(b []byte, n int) []byte {
	end := 0
	for range n {
		i := bytes.Index(b[end:], []byte("\n\n"))
		if i < 0 {
			return b
		}
		end += i + 2
	}
	return b[:end:end] // full slice expression: appending copies
}
