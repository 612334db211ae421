package acp_test

// This file tests what a provider told a turn and the session log keeps
// for a rebuilt session: the context window a refusal stated, and the
// notice shown when a broken answer was retried. The provider is the real
// OpenAI-compatible model against a local fake server.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/openai"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
)

// fakeProvider is a local chat-completions server: each request is
// answered by answer, n counting from 0.
type fakeProvider struct {
	srv    *httptest.Server
	answer func(n int, body []byte, w http.ResponseWriter, r *http.Request)
	mu     sync.Mutex
	bodies [][]byte
}

func newFakeProvider(t *testing.T, answer func(n int, body []byte, w http.ResponseWriter, r *http.Request)) *fakeProvider {
	t.Helper()
	p := &fakeProvider{answer: answer}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		n := len(p.bodies)
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		p.answer(n, body, w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// model returns the real provider against p; idle is its idle timeout.
func (p *fakeProvider) model(t *testing.T, idle time.Duration) model.Model {
	t.Helper()
	m, err := openai.New(openai.Config{
		Provider: openai.ProviderCompatible, Model: "local-model", BaseURL: p.srv.URL,
		HTTPClient: p.srv.Client(), MaxRetries: -1, IdleTimeout: idle,
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (p *fakeProvider) requests() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bodies)
}

// sseText writes a complete streamed answer of the chunks given.
func sseText(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range chunks {
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local-model",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": c}, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"local-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// sessionRecords reads the session's JSONL file and returns the events of
// type typ.
func sessionRecords(t *testing.T, dir, id, typ string) []session.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "sessions", id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev session.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == typ {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLearnedWindowSurvivesReload: a provider with a hidden context window
// refuses a request too large for it with HTTP 400 context_length_exceeded
// stating the window. The session learns the window, records it in its
// log (session/context-window) and answers. After a restart, session/load
// and the next prompt, every request is already sized to the learned
// window: the provider refuses nothing more. (Without the record, the
// reloaded session would send the whole paste again and be refused.)
func TestLearnedWindowSurvivesReload(t *testing.T) {
	// The window in tokens; the server counts one per 3 bytes of the body.
	const window = 20_000
	paste := "PASTE " + strings.Repeat("a line of the pasted log file ", 5000) + " TAIL" // about 150 KB
	refused := 0
	var mu sync.Mutex
	p := newFakeProvider(t, func(_ int, body []byte, w http.ResponseWriter, _ *http.Request) {
		if n := len(body) / 3; n > window {
			mu.Lock()
			refused++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, window, n)
			return
		}
		sseText(w, "answered")
	})
	refusals := func() int {
		mu.Lock()
		defer mu.Unlock()
		return refused
	}
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := start(t, dir, p.model(t, 0))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, paste); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("first prompt: %+v %v", r, err)
	}
	first := refusals()
	if first == 0 {
		t.Fatal("the provider refused nothing: the test does not exercise a learned window")
	}
	e.stop()
	recs := sessionRecords(t, dir, id, session.TypeContextWindow)
	if len(recs) != 1 {
		t.Fatalf("%d session/context-window records in the log, want 1", len(recs))
	}
	if d, err := session.DecodeData[session.ContextWindowData](recs[0]); err != nil || d.Window != window {
		t.Fatalf("recorded window %+v %v, want %d", d, err, window)
	}

	sent := len(p.requests())
	second := start(t, dir, p.model(t, 0))
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	if r, err := second.prompt(ctx, id, "and now?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after reload: %+v %v", r, err)
	}
	if n := refusals(); n != first {
		t.Errorf("the provider refused %d more request(s) after the reload, want none", n-first)
	}
	// The requests after the reload (a summary of the long history, now
	// that its size is known to pass the threshold, then the prompt's)
	// all fit the learned window, and the last carries the new prompt.
	after := p.requests()[sent:]
	if len(after) == 0 {
		t.Fatal("no request after the reload")
	}
	for i, b := range after {
		if n := len(b) / 3; n > window {
			t.Errorf("request %d after the reload: %d tokens, window %d", i, n, window)
		}
	}
	if last := after[len(after)-1]; !bytes.Contains(last, []byte("and now?")) {
		t.Errorf("the last request lacks the new prompt: %.300s", last)
	}
}

// TestBrokenAnswerNoticeReplaysAsShown: the provider's first answer stalls
// after some text (the idle timeout ends it); the agent shows a notice and
// retries once. The notice is recorded, so session/load after a restart
// shows it exactly as the live session did (same update, _meta included),
// in the same place between the partial text and the answer.
func TestBrokenAnswerNoticeReplaysAsShown(t *testing.T) {
	p := newFakeProvider(t, func(n int, _ []byte, w http.ResponseWriter, r *http.Request) {
		if n > 0 {
			sseText(w, "The whole ", "answer.")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"id": "c0", "object": "chat.completion.chunk", "created": 1, "model": "local-model",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "Half an ans"}, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stalls until the agent's idle timeout gives up
	})
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := start(t, dir, p.model(t, 300*time.Millisecond))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, "question"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", r, err)
	}
	live := e.rec.snapshot(id)
	e.stop()

	second := start(t, dir, p.model(t, 300*time.Millisecond))
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay := second.rec.snapshot(id)

	notices := func(ns []acpsdk.SessionNotification) []string {
		var out []string
		for _, n := range ns {
			if c := n.Update.AgentThoughtChunk; c != nil && c.Meta[acp.MetaNotice] != nil {
				b, err := json.Marshal(n.Update)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
		}
		return out
	}
	ln, rn := notices(live), notices(replay)
	if len(ln) != 1 || !strings.Contains(ln[0], "broke off") || !strings.Contains(ln[0], `"kind":"retry"`) {
		t.Fatalf("live notices %q, want one retry notice", ln)
	}
	if !slices.Equal(ln, rn) {
		t.Errorf("replayed notices differ from the live ones:\nlive   %q\nreplay %q", ln, rn)
	}
	// The same account in the same order (a replay also shows the
	// person's own messages, which a live client already has).
	shown := func(ns []acpsdk.SessionNotification) []string {
		var out []string
		for _, l := range transcript(ns) {
			if !strings.HasPrefix(l, "user_message_chunk ") && !strings.HasPrefix(l, "session_info_update ") {
				out = append(out, l)
			}
		}
		return out
	}
	want := []string{"agent_message_chunk Half an ans", "agent_thought_chunk " + notices2text(t, ln[0]), "agent_message_chunk The whole answer."}
	if got := shown(live); !slices.Equal(got, want) {
		t.Errorf("live:\n%q\nwant:\n%q", got, want)
	}
	if got := shown(replay); !slices.Equal(got, want) {
		t.Errorf("replay:\n%q\nwant:\n%q", got, want)
	}
}

// notices2text is the text of a notice update rendered by json.Marshal.
func notices2text(t *testing.T, u string) string {
	t.Helper()
	var v acpsdk.SessionUpdate
	if err := json.Unmarshal([]byte(u), &v); err != nil || v.AgentThoughtChunk == nil || v.AgentThoughtChunk.Content.Text == nil {
		t.Fatalf("notice %s: %v", u, err)
	}
	return v.AgentThoughtChunk.Content.Text.Text
}

// sseTextUsage is sseText ending with a usage chunk of the tokens given.
func sseTextUsage(w http.ResponseWriter, prompt, completion int, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local-model",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": nil}}})
	fmt.Fprintf(w, "data: %s\n\n", b)
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"local-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
	fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"local-model","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", prompt, completion, prompt+completion)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// TestUsageReportsLearnedWindow: a model whose window no table or setting
// gives shows no usage until a provider's refusal states the window; from
// then on every usage_update reports it as the size: at once when it is
// learned (before the answer), after the answer with the provider's
// count, at the end of the session/load replay after a restart (the same
// figures the live session showed last), and after the next prompt.
func TestUsageReportsLearnedWindow(t *testing.T) {
	const window = 20_000 // the server counts one token per 3 bytes
	const completion = 7
	paste := "PASTE " + strings.Repeat("a line of the pasted log file ", 5000) + " TAIL" // about 150 KB
	var mu sync.Mutex
	lastPrompt := 0 // the token count of the last request answered
	p := newFakeProvider(t, func(_ int, body []byte, w http.ResponseWriter, _ *http.Request) {
		n := len(body) / 3
		if n > window {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, window, n)
			return
		}
		mu.Lock()
		lastPrompt = n
		mu.Unlock()
		sseTextUsage(w, n, completion, "answered")
	})
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return lastPrompt + completion
	}
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	e := start(t, dir, p.model(t, 0))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)

	// Unknown window, nothing learned: no usage is shown (unchanged).
	if r, err := e.prompt(ctx, id, "hello"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("first prompt: %+v %v", r, err)
	}
	if us := usages(e.rec.snapshot(id)); len(us) != 0 {
		t.Fatalf("usage with an unknown window: %+v, want none", us)
	}

	e.rec.reset()
	if r, err := e.prompt(ctx, id, paste); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("paste prompt: %+v %v", r, err)
	}
	if recs := sessionRecords(t, dir, id, session.TypeContextWindow); len(recs) != 1 {
		t.Fatalf("%d session/context-window records, want 1: the test does not exercise a learned window", len(recs))
	}
	live := e.rec.snapshot(id)
	us := usages(live)
	if len(us) < 2 {
		t.Fatalf("usage updates after the refusal: %+v, want one when learned and one after the answer", us)
	}
	for i, u := range us {
		if u.Size != window || u.Used <= 0 || u.Used > window {
			t.Errorf("usage %d = %+v, want size %d and 0 < used <= size", i, u, window)
		}
	}
	// Shown at once: the refusal is the first thing of the turn the editor
	// sees, as a full context against the learned size, before any
	// compaction or retry it leads to.
	if u := live[0].Update.UsageUpdate; u == nil || u.Size != window || u.Used != window {
		t.Errorf("first update of the turn: %s, want usage %d/%d", transcript(live[:1]), window, window)
	}
	last := us[len(us)-1]
	if want := answered(); last.Used != want {
		t.Errorf("usage after the answer: used %d, want the provider's count %d", last.Used, want)
	}
	e.stop()

	second := start(t, dir, p.model(t, 0))
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	ru := usages(second.rec.snapshot(id))
	if len(ru) != 1 || ru[0].Used != last.Used || ru[0].Size != window {
		t.Errorf("replayed usage = %+v, want one of %d/%d as the live session showed last", ru, last.Used, window)
	}

	second.rec.reset()
	if r, err := second.prompt(ctx, id, "and now?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after reload: %+v %v", r, err)
	}
	au := usages(second.rec.snapshot(id))
	if len(au) == 0 {
		t.Fatal("no usage after the prompt that followed the reload")
	}
	if u := au[len(au)-1]; u.Size != window || u.Used != answered() {
		t.Errorf("usage after the reload's prompt = %+v, want %d/%d", u, answered(), window)
	}
	second.stop()

	// session/resume after another restart replays nothing: the next
	// response still reports the learned size.
	third := start(t, dir, p.model(t, 0))
	third.initialize(ctx)
	if _, err := third.cs.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if us := usages(third.rec.snapshot(id)); len(us) != 0 {
		t.Errorf("usage on resume = %+v, want none (nothing is replayed)", us)
	}
	if r, err := third.prompt(ctx, id, "still there?"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after resume: %+v %v", r, err)
	}
	ru = usages(third.rec.snapshot(id))
	if len(ru) == 0 {
		t.Fatal("no usage after the prompt that followed the resume")
	}
	if u := ru[len(ru)-1]; u.Size != window || u.Used != answered() {
		t.Errorf("usage after the resume's prompt = %+v, want %d/%d", u, answered(), window)
	}
	third.stop()

	// A configured window wins over the learned one, as in the agent.
	const configured = 50_000
	fourth := startCfg(t, dir, p.model(t, 0), func(c *app.Config) { c.ContextWindow = configured })
	fourth.initialize(ctx)
	if _, err := fourth.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load with a configured window: %v", err)
	}
	if ru := usages(fourth.rec.snapshot(id)); len(ru) != 1 || ru[0].Size != configured || ru[0].Used != answered() {
		t.Errorf("replayed usage with --context-window %d = %+v, want %d/%d", configured, ru, answered(), configured)
	}
}
