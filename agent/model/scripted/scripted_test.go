package scripted_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
)

const example = `# a scenario file may carry other sections
steps:
  - prompt: hi
model:
  main:
    - tool_calls:
        - id: call_bg_start
          name: subagent
          arguments: '{"description": "Reply with CHILD_OK", "prompt": "...", "run_in_background": true}'
      usage: {input: 10, output: 5}
    - text: STARTED
  "Reply with CHILD_OK":
    - reasoning: think
      text: CHILD_OK
    - {text: half, error: broke, error_after_chunks: true}
    - {error: refused}
    - {text: waiting, hang: true}
    - {text: half an, usage: {input: 3, output: 2}, error: stalled, error_after_chunks: true, stream_broken: true}
  "*":
    - {text: any, finish: length}
`

// collect runs one call and returns its chunks and error.
func collect(ctx context.Context, m model.Model, key string, call int) ([]session.Chunk, error) {
	var out []session.Chunk
	for c, err := range m.Stream(ctx, model.Request{Caller: model.Caller{ScriptKey: key, Call: call}}) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func TestStream(t *testing.T) {
	sc, err := scripted.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(sc)
	tc := func(id, name, args string) session.Chunk {
		return session.Chunk{Type: session.ChunkToolCall, ID: id, Name: name, Arguments: args}
	}
	text := func(s string) session.Chunk { return session.Chunk{Type: session.ChunkText, Text: s} }
	finish := func(f string) session.Chunk { return session.Chunk{Type: session.ChunkFinish, Finish: f} }
	tests := []struct {
		name    string
		key     string
		call    int
		want    []session.Chunk
		wantErr string
		// wantIs, when set, is the sentinel the error wraps.
		wantIs error
	}{
		{"tool call", "main", 0, []session.Chunk{
			tc("call_bg_start", "subagent", `{"description": "Reply with CHILD_OK", "prompt": "...", "run_in_background": true}`),
			{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 10, OutputTokens: 5}},
			finish("tool-calls")}, "", nil},
		{"text", "main", 1, []session.Chunk{text("STARTED"), finish("stop")}, "", nil},
		{"reasoning and text", "Reply with CHILD_OK", 0, []session.Chunk{
			{Type: session.ChunkReasoning, Text: "think"}, text("CHILD_OK"), finish("stop")}, "", nil},
		{"error after chunks", "Reply with CHILD_OK", 1, []session.Chunk{text("half"), finish("stop")}, "broke", nil},
		{"error before chunks", "Reply with CHILD_OK", 2, nil, "refused", nil},
		{"broken stream: no usage, no finish", "Reply with CHILD_OK", 4, []session.Chunk{text("half "), text("an")}, "stalled", model.ErrStreamBroken},
		{"fallback key", "someone else", 0, []session.Chunk{text("any"), finish("length")}, "", nil},
		{"index past the end", "main", 2, nil, `scripted model: script key "main" has no reply at call index 2 (it has 2)`, nil},
		{"fallback index past the end", "x", 1, nil, `script key "*" has no reply at call index 1 (it has 1)`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t.Context(), m, tt.key, tt.call)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("chunks = %+v\nwant %+v", got, tt.want)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			for _, sentinel := range []error{model.ErrStreamBroken, model.ErrContextLength} {
				if errors.Is(err, sentinel) != (sentinel == tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, errors.Is(err, sentinel))
				}
			}
		})
	}
}

func TestMissingKeyFailsLoudly(t *testing.T) {
	sc, err := scripted.Parse([]byte("model:\n  main: [{text: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t.Context(), scripted.New(sc), "child", 3)
	var se *scripted.ScriptError
	if !errors.As(err, &se) || se.Key != "child" || se.Index != 3 || se.Code() != scripted.CodeScriptMismatch {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), `"child"`) || !strings.Contains(err.Error(), "3") {
		t.Errorf("message %q does not name key and index", err)
	}
}

func TestHangReleasedByCancellation(t *testing.T) {
	sc, err := scripted.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("stop now")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var got []session.Chunk
	var streamErr error
	for c, err := range scripted.New(sc).Stream(ctx, model.Request{Caller: model.Caller{ScriptKey: "Reply with CHILD_OK", Call: 3}}) {
		if err != nil {
			streamErr = err
			break
		}
		got = append(got, c)
		cancel(cause) // cancel once the first chunk arrived
	}
	if len(got) != 1 || got[0].Text != "waiting" {
		t.Errorf("chunks = %+v", got)
	}
	if !errors.Is(streamErr, cause) {
		t.Errorf("err = %v, want the context cause", streamErr)
	}
}

func TestChunksSplitOnWords(t *testing.T) {
	chunks := scripted.Chunks(scripted.Reply{Text: "one two  three\nfour"})
	var parts []string
	for _, c := range chunks {
		if c.Type == session.ChunkText {
			parts = append(parts, c.Text)
		}
	}
	if want := []string{"one ", "two  ", "three\n", "four"}; !reflect.DeepEqual(parts, want) {
		t.Errorf("parts = %q, want %q", parts, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no model section", "steps: []\n", `no "model" section`},
		{"model not a mapping", "model: [1]\n", `"model" must map`},
		{"unknown reply field", "model:\n  main:\n    - txt: hi\n", `line 3: unknown reply field "txt"`},
		{"unknown tool call field", "model:\n  main:\n    - tool_calls: [{nme: x}]\n", `unknown tool call field "nme"`},
		{"unknown usage field", "model:\n  main:\n    - usage: {in: 1}\n", `unknown usage field "in"`},
		{"bad finish", "model:\n  main:\n    - {text: x, finish: done}\n", `unknown finish "done"`},
		{"tool call without name", "model:\n  main:\n    - tool_calls: [{id: a}]\n", "missing name"},
		{"hang with error", "model:\n  main:\n    - {hang: true, error: x}\n", "exclusive"},
		{"error_after_chunks alone", "model:\n  main:\n    - {error_after_chunks: true}\n", "without error"},
		{"stream_broken alone", "model:\n  main:\n    - {text: x, stream_broken: true}\n", "stream_broken without error"},
		{"stream_broken and context_length_exceeded", "model:\n  main:\n    - {error: x, stream_broken: true, context_length_exceeded: true}\n", "exclusive"},
		{"replies not a list", "model:\n  main: {text: x}\n", "parse model section"},
		{"not YAML", "model: [\n", "parse script"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted.Parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Keys(); !reflect.DeepEqual(got, []string{"*", "Reply with CHILD_OK", "main"}) {
		t.Errorf("keys = %q", got)
	}
	if _, err := scripted.Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("model:\n  main: []\n"))
	f.Add([]byte("model:\n  main:\n    - {text: x, usage: {input: -1}}\n"))
	f.Add([]byte("model: ~\n"))
	f.Add([]byte("model:\n  a:\n    - tool_calls: [{name: n, arguments: 7}]\n"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := scripted.Parse(data)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("Parse accepted a script Validate rejects: %v", err)
		}
		// Every accepted reply must stream without panicking.
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // hang entries return at once
		m := scripted.New(sc)
		for key, replies := range sc.Replies {
			for i := range replies {
				for range m.Stream(ctx, model.Request{Caller: model.Caller{ScriptKey: key, Call: i}}) {
				}
				_ = scripted.Chunks(replies[i])
			}
		}
	})
}

// A script with reasoning offers the thinking switch; with thinking off
// its replies come without the reasoning, the rest unchanged. A script
// without reasoning has no thinking to switch.
func TestThinkingSwitch(t *testing.T) {
	sc, err := scripted.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(sc)
	if !model.SwitchesThinking(m) {
		t.Error("a script with reasoning does not switch thinking")
	}
	req := model.Request{Caller: model.Caller{ScriptKey: "Reply with CHILD_OK"}}
	var on, off model.Accumulator
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		on.Add(c)
	}
	req.NoThinking = true
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		off.Add(c)
	}
	if on.ReasoningText() != "think" || on.Text() != "CHILD_OK" {
		t.Errorf("thinking on: reasoning %q, text %q", on.ReasoningText(), on.Text())
	}
	if off.ReasoningText() != "" || off.Text() != "CHILD_OK" {
		t.Errorf("thinking off: reasoning %q, text %q; want the text alone", off.ReasoningText(), off.Text())
	}
	plain, err := scripted.Parse([]byte("model:\n  main: [{text: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if model.SwitchesThinking(scripted.New(plain)) {
		t.Error("a script without reasoning switches thinking")
	}
}
