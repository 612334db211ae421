package openai_test

// This file holds the scripted-vs-real parity test (issue 7): the same
// conversation is run through a real agent.Agent on a real session.Store
// twice, once on the scripted model and once on the openai provider against
// a loopback server replaying recorded SSE streams (testdata/parity-*.sse,
// one per request, in order). The two session logs must have the same
// shape. What may legitimately differ is normalised away:
//
//   - chunk counts and boundaries: the assistant/chunk events of a step are
//     folded into one summary (runs of chunk types, assembled text,
//     reasoning and tool calls, finish, whether usage came);
//   - usage numbers (only their presence is compared);
//   - message ids, event times and seqs (seq references are rewritten as
//     positions in the normalised log);
//   - the provider and model recorded on assistant messages.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/openai"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

const paritySystem = "You answer questions about capitals."

const lookupSchema = `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`

// lookupTool answers "capital:<country>" keys from a fixed table.
type lookupTool struct{}

func (lookupTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "lookup", Description: "Look a fact up by key.", Parameters: json.RawMessage(lookupSchema)}
}

func (lookupTool) Execute(_ context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	v, ok := map[string]string{"capital:France": "Paris", "capital:Japan": "Tokyo"}[args.Key]
	if !ok {
		return tool.Result{}, &tool.Error{Code: "NOT_FOUND", Message: "no entry for " + strconv.Quote(args.Key)}
	}
	return tool.TextResult(v, map[string]string{"key": args.Key, "value": v}), nil
}

// wireToolMsg is a tool message as sent on the wire.
type wireToolMsg struct{ CallID, Content string }

type parityCase struct {
	name   string
	prompt string
	script string
	// streams are the SSE fixtures, one per model request, in order.
	streams []string

	// Expectations on both logs, so the test fails when both paths are
	// equally wrong.
	wantTypes []string        // normalised event types
	wantCalls []session.Block // tool-call blocks of the turn, in order
	wantFinal string          // final output text of the turn

	// Expectations on the HTTP request bodies.
	wantRoles    [][]string    // message roles, per request
	wantToolMsgs []wireToolMsg // tool messages of the last request
	// wantEcho is the reasoning_content DeepSeek must get back on the
	// tool-calling assistant message of the last request ("" for none).
	wantEcho string
}

const chunks = "assistant/chunk*"

var parityCases = []parityCase{
	{
		name:   "tool-call",
		prompt: "What is the capital of France?",
		script: `
model:
  main:
    - text: "Let me look that up."
      tool_calls:
        - id: call_lookup_1
          name: lookup
          arguments: '{"key": "capital:France"}'
      usage: {input: 1, output: 1}
    - text: "The capital of France is Paris."
      usage: {input: 2, output: 2}
`,
		streams: []string{"parity-tool-1.sse", "parity-tool-2.sse"},
		wantTypes: []string{
			"agent/inbox/spliced", "turn/start", "agent/inbox/spliced",
			"step/start", "user/message", "session/title", chunks, "assistant/message", "tool/call", "tool/result", "step/end",
			"step/start", chunks, "assistant/message", "step/end",
			"turn/end",
		},
		wantCalls: []session.Block{
			{Type: session.BlockToolCall, ID: "call_lookup_1", Name: "lookup", Arguments: `{"key": "capital:France"}`},
		},
		wantFinal:    "The capital of France is Paris.",
		wantRoles:    [][]string{{"system", "user"}, {"system", "user", "assistant", "tool"}},
		wantToolMsgs: []wireToolMsg{{"call_lookup_1", "Paris"}},
	},
	{
		name:   "reasoning-text",
		prompt: "Hi!",
		script: `
model:
  main:
    - reasoning: "The user greets me; a short reply fits."
      text: "Hello! How can I help?"
      usage: {input: 3, output: 3}
`,
		streams: []string{"parity-reasoning-1.sse"},
		wantTypes: []string{
			"agent/inbox/spliced", "turn/start", "agent/inbox/spliced",
			"step/start", "user/message", "session/title", chunks, "assistant/message", "step/end",
			"turn/end",
		},
		wantFinal: "Hello! How can I help?",
		wantRoles: [][]string{{"system", "user"}},
	},
	{
		name:   "reasoning-parallel-tools",
		prompt: "Capitals of France and Japan?",
		script: `
model:
  main:
    - reasoning: "Two lookups are needed."
      tool_calls:
        - id: call_fr
          name: lookup
          arguments: '{"key": "capital:France"}'
        - id: call_jp
          name: lookup
          arguments: '{"key": "capital:Japan"}'
      usage: {input: 4, output: 4}
    - text: "Paris and Tokyo."
      usage: {input: 5, output: 5}
`,
		streams: []string{"parity-parallel-1.sse", "parity-parallel-2.sse"},
		wantTypes: []string{
			"agent/inbox/spliced", "turn/start", "agent/inbox/spliced",
			"step/start", "user/message", "session/title", chunks, "assistant/message",
			"tool/call", "tool/result", "tool/call", "tool/result", "step/end",
			"step/start", chunks, "assistant/message", "step/end",
			"turn/end",
		},
		wantCalls: []session.Block{
			{Type: session.BlockToolCall, ID: "call_fr", Name: "lookup", Arguments: `{"key": "capital:France"}`},
			{Type: session.BlockToolCall, ID: "call_jp", Name: "lookup", Arguments: `{"key": "capital:Japan"}`},
		},
		wantFinal:    "Paris and Tokyo.",
		wantRoles:    [][]string{{"system", "user"}, {"system", "user", "assistant", "tool", "tool"}},
		wantToolMsgs: []wireToolMsg{{"call_fr", "Paris"}, {"call_jp", "Tokyo"}},
		wantEcho:     "Two lookups are needed.",
	},
}

func TestParityScriptedVsReplay(t *testing.T) {
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scripted.Parse([]byte(tc.script))
			if err != nil {
				t.Fatal(err)
			}
			want := runParity(t, scripted.New(sc), tc.prompt)

			srv := newStreamServer(t, tc.streams...)
			m, err := openai.New(srv.config())
			if err != nil {
				t.Fatal(err)
			}
			got := runParity(t, m, tc.prompt)

			// The log shapes.
			wantShape, gotShape := logShape(t, want.events), logShape(t, got.events)
			if !slices.Equal(wantShape, gotShape) {
				t.Errorf("session log shape differs (scripted vs replay):\n%s", lineDiff(wantShape, gotShape))
			}
			for name, r := range map[string]parityRun{"scripted": want, "replay": got} {
				checkExpectations(t, name, tc, r)
			}

			// What the loop asked of each model.
			if w, g := requestsJSON(t, want.requests), requestsJSON(t, got.requests); !slices.Equal(w, g) {
				t.Errorf("model requests differ (scripted vs replay):\n%s", lineDiff(w, g))
			}
			if w, g := turnJSON(t, want.result), turnJSON(t, got.result); w != g {
				t.Errorf("turn result differs:\nscripted: %s\nreplay:   %s", w, g)
			}

			checkBodies(t, tc, srv.bodies(t), len(tc.streams))
		})
	}
}

// parityRun is what one run of a conversation produced.
type parityRun struct {
	events   []session.Event
	requests []model.Request
	result   agent.TurnResult
}

// runParity runs one prompt to the end of its turn on a fresh store with
// deterministic sources, and returns the log, the model requests and the
// turn result. The agent is closed (its goroutine waited for) before
// runParity returns.
func runParity(t *testing.T, m model.Model, prompt string) parityRun {
	t.Helper()
	st := session.NewStore(&session.DeterministicSources{})
	s, err := st.Create(session.Header{}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Remove(s.ID())
	reg, err := tool.NewRegistry(lookupTool{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingModel{inner: m}
	a := agent.New(s, agent.Options{Model: rec, Tools: reg, System: paritySystem})
	res, err := a.Prompt(t.Context(), session.Message{Content: []session.Block{session.Text(prompt)}})
	if cerr := a.Close(context.Background()); cerr != nil {
		t.Errorf("close agent: %v", cerr)
	}
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return parityRun{events: s.MustEvents(), requests: rec.all(), result: res}
}

// recordingModel keeps every request it forwards.
type recordingModel struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []model.Request
}

func (r *recordingModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Stream(ctx, req)
}

func (r *recordingModel) all() []model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// --- Normalisation -------------------------------------------------------

// shapeEntry is one normalised log entry.
type shapeEntry struct {
	Type    string `json:"type"`
	Surface string `json:"surface,omitempty"`
	// Sources are positions in the normalised log, or "step-chunks" for
	// an assistant message sourced by exactly its step's chunks.
	Sources any `json:"sources,omitempty"`
	Data    any `json:"data"`
}

// chunkSummary stands for all assistant/chunk events of one step.
type chunkSummary struct {
	Turn      int             `json:"turn"`
	Step      int             `json:"step"`
	Runs      []string        `json:"runs"` // chunk types, consecutive repeats collapsed
	Reasoning string          `json:"reasoning,omitempty"`
	Text      string          `json:"text,omitempty"`
	Calls     []session.Block `json:"calls,omitempty"`
	Usage     bool            `json:"usage"`
	Finish    string          `json:"finish,omitempty"`

	seqs  []int64
	calls map[int]int // chunk index -> position in Calls
}

func (cs *chunkSummary) add(t *testing.T, ev session.Event, c session.Chunk) {
	t.Helper()
	cs.seqs = append(cs.seqs, ev.Seq)
	if n := len(cs.Runs); n == 0 || cs.Runs[n-1] != c.Type {
		cs.Runs = append(cs.Runs, c.Type)
	}
	switch c.Type {
	case session.ChunkReasoning:
		cs.Reasoning += c.Text
	case session.ChunkText:
		cs.Text += c.Text
	case session.ChunkToolCall:
		i, ok := cs.calls[c.Index]
		if !ok {
			i = len(cs.Calls)
			cs.calls[c.Index] = i
			cs.Calls = append(cs.Calls, session.Block{Type: session.BlockToolCall})
		}
		b := &cs.Calls[i]
		// The vocabulary sends id and name once, on a call's first delta.
		if c.ID != "" {
			if b.ID != "" {
				t.Errorf("seq %d: tool call %d got a second id %q (had %q)", ev.Seq, c.Index, c.ID, b.ID)
			}
			b.ID = c.ID
		}
		if c.Name != "" {
			if b.Name != "" {
				t.Errorf("seq %d: tool call %d got a second name %q (had %q)", ev.Seq, c.Index, c.Name, b.Name)
			}
			b.Name = c.Name
		}
		b.Arguments += c.Arguments
	case session.ChunkUsage:
		cs.Usage = c.Usage != nil
	case session.ChunkFinish:
		cs.Finish = c.Finish
	}
}

// assistantShape is assistant/message without ids, usage numbers and
// provider/model.
type assistantShape struct {
	Turn        int             `json:"turn"`
	Step        int             `json:"step"`
	Role        string          `json:"role"`
	Content     []session.Block `json:"content"`
	SourceKind  string          `json:"sourceKind"`
	Usage       bool            `json:"usage"`
	Finish      string          `json:"finish,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
}

// logShape validates a log and returns its normalised entries, one JSON
// line each.
func logShape(t *testing.T, evs []session.Event) []string {
	t.Helper()
	if err := session.ValidateLog(evs); err != nil {
		t.Fatalf("invalid log: %v", err)
	}
	// First pass: fold each step's chunks.
	type key struct{ turn, step int }
	groups := map[key]*chunkSummary{}
	first := map[int64]*chunkSummary{} // seq of a group's first chunk
	for _, ev := range evs {
		if ev.Type != session.TypeAssistantChunk {
			continue
		}
		d := decodeEvent[session.AssistantChunkData](t, ev)
		k := key{d.Turn, d.Step}
		g := groups[k]
		if g == nil {
			g = &chunkSummary{Turn: d.Turn, Step: d.Step, calls: map[int]int{}}
			groups[k] = g
			first[ev.Seq] = g
		}
		g.add(t, ev, d.Chunk)
	}

	// Second pass: one entry per non-chunk event, one per chunk group.
	pos := map[int64]int{} // seq -> position in out
	var out []string
	mapSeqs := func(seqs []int64) []string {
		var r []string
		for _, s := range seqs {
			p, ok := pos[s]
			if !ok {
				r = append(r, "unknown:"+strconv.FormatInt(s, 10))
				continue
			}
			r = append(r, strconv.Itoa(p))
		}
		return r
	}
	for _, ev := range evs {
		e := shapeEntry{Type: ev.Type, Data: ev.Data}
		if ev.SurfaceOp != nil {
			e.Surface = "append"
			if ev.SurfaceOp.Replace {
				e.Surface = fmt.Sprintf("replace:%v", mapSeqs([]int64{ev.SurfaceOp.Start, ev.SurfaceOp.End}))
			}
		}
		if len(ev.SourceEventSeqs) > 0 {
			e.Sources = mapSeqs(ev.SourceEventSeqs)
		}
		switch ev.Type {
		case session.TypeAssistantChunk:
			g, ok := first[ev.Seq]
			if !ok {
				pos[ev.Seq] = len(out) - 1 // folded into the open group
				continue
			}
			e.Type, e.Data = chunks, g
		case session.TypeInboxSpliced:
			d := decodeEvent[session.InboxSplicedData](t, ev)
			for i := range d.Inserted {
				d.Inserted[i].ID = ""
			}
			e.Data = d
		case session.TypeUserMessage:
			m := decodeEvent[session.Message](t, ev)
			m.ID = ""
			e.Data = m
		case session.TypeAssistantMessage:
			d := decodeEvent[session.AssistantMessageData](t, ev)
			e.Data = assistantShape{
				Turn: d.Turn, Step: d.Step, Role: d.Message.Role, Content: d.Message.Content,
				SourceKind: d.Message.Source.Kind, Usage: d.Usage != nil, Finish: d.Finish, Interrupted: d.Interrupted,
			}
			if g := groups[key{d.Turn, d.Step}]; g != nil && slices.Equal(ev.SourceEventSeqs, g.seqs) {
				e.Sources = "step-chunks"
			}
		case session.TypeToolResult:
			d := decodeEvent[session.ToolResultData](t, ev)
			d.Message.ID = ""
			e.Data = d
		case session.TypeSessionTitle:
			d := decodeEvent[session.TitleData](t, ev)
			e.Data = struct {
				Title    string         `json:"title"`
				Messages []string       `json:"messages"`
				Source   session.Source `json:"source"`
			}{d.Title, mapSeqs(d.MessageSeqs), d.Source}
		}
		pos[ev.Seq] = len(out)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func decodeEvent[T any](t *testing.T, ev session.Event) T {
	t.Helper()
	v, err := session.DecodeData[T](ev)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// lineDiff renders two line lists side by side, marking differing lines.
func lineDiff(a, b []string) string {
	var sb strings.Builder
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x == y {
			fmt.Fprintf(&sb, "  %2d  %s\n", i, x)
			continue
		}
		fmt.Fprintf(&sb, "- %2d  %s\n+ %2d  %s\n", i, x, i, y)
	}
	return sb.String()
}

// checkExpectations checks one run's log against the case's explicit
// expectations.
func checkExpectations(t *testing.T, name string, tc parityCase, r parityRun) {
	t.Helper()
	var types []string
	for _, line := range logShape(t, r.events) {
		var e struct{ Type string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		types = append(types, e.Type)
	}
	if !slices.Equal(types, tc.wantTypes) {
		t.Errorf("%s: event types:\n%s", name, lineDiff(tc.wantTypes, types))
	}

	var calls []session.Block
	for _, ev := range r.events {
		if ev.Type != session.TypeToolCall {
			continue
		}
		d := decodeEvent[session.ToolCallData](t, ev)
		calls = append(calls, session.Block{Type: session.BlockToolCall, ID: d.CallID, Name: d.Name, Arguments: d.Arguments})
	}
	if !reflect.DeepEqual(calls, tc.wantCalls) {
		t.Errorf("%s: tool calls = %+v, want %+v", name, calls, tc.wantCalls)
	}
	// Each tool result answers its call, successfully.
	for _, ev := range r.events {
		if ev.Type != session.TypeToolResult {
			continue
		}
		d := decodeEvent[session.ToolResultData](t, ev)
		if len(d.Message.Content) != 1 || d.Message.Content[0].IsError || d.Error != nil {
			t.Errorf("%s: tool result at seq %d is not a single success: %s", name, ev.Seq, ev.Data)
		}
	}

	if r.result.Reason.Kind != session.TurnEndCompleted {
		t.Errorf("%s: turn ended %+v, want completed", name, r.result.Reason)
	}
	if got := session.JoinText(r.result.Output, ""); got != tc.wantFinal {
		t.Errorf("%s: final output %q, want %q", name, got, tc.wantFinal)
	}
	if len(r.requests) != len(tc.streams) {
		t.Errorf("%s: %d model requests, want %d", name, len(r.requests), len(tc.streams))
	}
}

func requestsJSON(t *testing.T, reqs []model.Request) []string {
	t.Helper()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

func turnJSON(t *testing.T, r agent.TurnResult) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --- HTTP side -------------------------------------------------------------

// checkBodies checks the chat-completions request bodies of the replay run.
func checkBodies(t *testing.T, tc parityCase, bodies []map[string]any, want int) {
	t.Helper()
	if len(bodies) != want {
		t.Fatalf("%d HTTP requests, want %d", len(bodies), want)
	}
	for i, body := range bodies {
		if body["model"] != "deepseek-chat" || body["stream"] != true {
			t.Errorf("request %d: model %v stream %v", i, body["model"], body["stream"])
		}
		tools, _ := body["tools"].([]any)
		if len(tools) != 1 {
			t.Errorf("request %d: tools = %v, want the lookup function", i, body["tools"])
		} else {
			fn, _ := tools[0].(map[string]any)["function"].(map[string]any)
			params, _ := json.Marshal(fn["parameters"])
			var wantParams any
			_ = json.Unmarshal([]byte(lookupSchema), &wantParams)
			wp, _ := json.Marshal(wantParams)
			if fn["name"] != "lookup" || string(params) != string(wp) {
				t.Errorf("request %d: tool = %v", i, tools[0])
			}
		}
		msgs := messagesOf(t, i, body)
		var roles []string
		for _, m := range msgs {
			roles = append(roles, str(m["role"]))
		}
		if i < len(tc.wantRoles) && !slices.Equal(roles, tc.wantRoles[i]) {
			t.Errorf("request %d: roles %v, want %v", i, roles, tc.wantRoles[i])
		}
		if len(msgs) >= 2 && (str(msgs[0]["content"]) != paritySystem || str(msgs[1]["content"]) != tc.prompt) {
			t.Errorf("request %d: system/user = %v / %v", i, msgs[0]["content"], msgs[1]["content"])
		}
	}

	last := messagesOf(t, len(bodies)-1, bodies[len(bodies)-1])
	var toolMsgs []wireToolMsg
	var assistant map[string]any
	for _, m := range last {
		switch m["role"] {
		case "tool":
			toolMsgs = append(toolMsgs, wireToolMsg{CallID: str(m["tool_call_id"]), Content: str(m["content"])})
		case "assistant":
			if _, ok := m["tool_calls"]; ok {
				assistant = m
			}
		}
	}
	if !slices.Equal(toolMsgs, tc.wantToolMsgs) {
		t.Errorf("last request: tool messages %+v, want %+v", toolMsgs, tc.wantToolMsgs)
	}
	if len(tc.wantCalls) == 0 {
		if assistant != nil {
			t.Errorf("last request: unexpected tool-calling assistant message %v", assistant)
		}
		return
	}
	if assistant == nil {
		t.Fatalf("last request: no assistant message with tool_calls: %v", last)
	}
	var calls []session.Block
	for _, c := range assistant["tool_calls"].([]any) {
		cm, _ := c.(map[string]any)
		fn, _ := cm["function"].(map[string]any)
		if cm["type"] != "function" {
			t.Errorf("last request: tool call type %v", cm["type"])
		}
		calls = append(calls, session.Block{Type: session.BlockToolCall, ID: str(cm["id"]), Name: str(fn["name"]), Arguments: str(fn["arguments"])})
	}
	if !reflect.DeepEqual(calls, tc.wantCalls) {
		t.Errorf("last request: assistant tool_calls %+v, want %+v", calls, tc.wantCalls)
	}
	if got := str(assistant["reasoning_content"]); got != tc.wantEcho {
		t.Errorf("last request: assistant reasoning_content %q, want %q", got, tc.wantEcho)
	}
}

func messagesOf(t *testing.T, i int, body map[string]any) []map[string]any {
	t.Helper()
	raw, _ := body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		mm, ok := m.(map[string]any)
		if !ok {
			t.Fatalf("request %d: message %v is not an object", i, m)
		}
		out = append(out, mm)
	}
	return out
}

// str returns v if it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// streamServer is a loopback chat-completions endpoint serving one
// recorded SSE stream per request, in order, and recording request bodies.
// A request beyond the recorded streams gets a 400, which the provider
// does not retry.
type streamServer struct {
	srv     *httptest.Server
	streams [][]byte

	mu   sync.Mutex
	reqs [][]byte
}

func newStreamServer(t *testing.T, names ...string) *streamServer {
	t.Helper()
	s := &streamServer{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		s.streams = append(s.streams, b)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *streamServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, body)
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/chat/completions":
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	case n >= len(s.streams):
		http.Error(w, `{"error":{"message":"no recorded stream for request `+strconv.Itoa(n)+`"}}`, http.StatusBadRequest)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(s.streams[n])))
		_, _ = w.Write(s.streams[n])
	}
}

func (s *streamServer) config() openai.Config {
	return openai.Config{
		Provider:   openai.ProviderDeepSeek,
		Model:      "deepseek-chat",
		BaseURL:    s.srv.URL,
		APIKey:     "test-key-parity",
		HTTPClient: s.srv.Client(),
		MaxRetries: -1,
		Getenv:     func(string) string { return "" },
	}
}

func (s *streamServer) bodies(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, len(s.reqs))
	for i, b := range s.reqs {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatalf("request %d: %v\n%s", i, err, b)
		}
	}
	return out
}
