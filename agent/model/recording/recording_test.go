package recording_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/recording"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
)

const script = `model:
  main:
    - reasoning: "let me read "
      tool_calls:
        - {id: call_read, name: read, arguments: '{"path": "notes.txt"}'}
        - {id: call_out, name: read, arguments: '{"path": "/etc/hostname"}'}
      usage: {input: 10, output: 5}
    - text: "done with sk-secret-value-123 inside"
      finish: length
  Child task:
    - {text: half, error: broke, error_after_chunks: true}
  main/compact:
    - text: "## Summary\nall of it\n"
`

func drain(t *testing.T, ctx context.Context, m model.Model, key string, call int) {
	t.Helper()
	for _, err := range m.Stream(ctx, model.Request{Caller: model.Caller{ScriptKey: key, Call: call}}) {
		if err != nil {
			return
		}
	}
}

// The recorded replies, rendered and parsed back, replay what the model
// streamed, under the same keys and indexes; secrets are redacted and the
// file a read names is snapshotted as it was before the call.
func TestRecordRoundTrip(t *testing.T) {
	sc, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("token=sk-secret-value-123\nhello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := recording.New(recording.Options{Cwd: cwd, Secrets: []string{"sk-secret-value-123", "1"}})
	m := rec.Wrap(scripted.New(sc))
	drain(t, t.Context(), m, "main", 0)
	drain(t, t.Context(), m, "main", 1)
	drain(t, t.Context(), m, "Child task", 0)
	drain(t, t.Context(), m, "main/compact", 0)
	// The tools, allowed by the gate, touch the files the reply named.
	rec.Touched("s", filepath.Join(cwd, "notes.txt"))
	rec.Touched("s", "/etc/hostname")

	out, err := rec.Scenario(recording.Session{Prompt: "Read notes.txt", Mode: "bypass", Permissions: []string{"allow-once"}, Settled: 1})
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "sk-secret-value-123") {
		t.Fatalf("the secret reached the scenario:\n%s", text)
	}
	back, err := scripted.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	want := sc.Replies
	want["main"][1].Text = "done with [REDACTED] inside"
	want["Child task"][0] = scripted.Reply{Text: "half", Error: "broke", ErrorAfterChunks: true}
	for _, key := range sc.Keys() {
		if !reflect.DeepEqual(back.Replies[key], want[key]) {
			t.Errorf("key %q:\n got %+v\nwant %+v", key, back.Replies[key], want[key])
		}
	}
	if got := rec.Files(); !reflect.DeepEqual(got, map[string]string{"notes.txt": "token=[REDACTED]\nhello\n"}) {
		t.Errorf("files = %q", got)
	}
	notes := strings.Join(rec.Notes(), "\n")
	if !strings.Contains(notes, "/etc/hostname: outside the working directory") || !strings.Contains(notes, "notes.txt: secret values redacted") {
		t.Errorf("notes = %q", notes)
	}
	for _, s := range []string{"set_mode: bypass", "permissions:", "child_settled: 1", "text: Read notes.txt"} {
		if !strings.Contains(text, s) {
			t.Errorf("scenario lacks %q:\n%s", s, text)
		}
	}
}

// A cancelled call replays as a hang; a context-window refusal and a
// broken stream keep their kind.
func TestRecordFailures(t *testing.T) {
	rec := recording.New(recording.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	hang := model.Model(failing{err: context.Canceled})
	drain(t, ctx, rec.Wrap(hang), "main", 0)
	drain(t, t.Context(), rec.Wrap(failing{err: errors.Join(errors.New("too long"), model.ErrContextLength)}), "main", 1)
	drain(t, t.Context(), rec.Wrap(failing{err: fmt.Errorf("%w: stalled", model.ErrStreamBroken)}), "main", 2)
	got := rec.Replies()["main"]
	if len(got) != 3 || !got[0].Hang || !got[1].ContextLengthExceeded || got[1].StreamBroken || got[1].Error == "" ||
		!got[2].StreamBroken || !got[2].ErrorAfterChunks || got[2].ContextLengthExceeded {
		t.Fatalf("replies = %+v", got)
	}
}

type failing struct{ err error }

func (f failing) Stream(ctx context.Context, _ model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		if !yield(session.Chunk{Type: session.ChunkText, Text: "partial "}, nil) {
			return
		}
		yield(session.Chunk{}, f.err)
	}
}

func TestRedact(t *testing.T) {
	r := recording.NewRedactor("sk-abcdef", "short")
	tests := []struct{ in, want string }{
		{"key sk-abcdef here", "key [REDACTED] here"},
		{"Authorization: Bearer abc.def-123", "Authorization: [REDACTED]"},
		{`{"authorization": "Basic dXNlcjpwYXNz"}`, `{"authorization": "[REDACTED]"}`},
		{"curl -H 'x' Bearer tok_1234567", "curl -H 'x' Bearer [REDACTED]"},
		{"a short word", "a short word"}, // under six bytes: not a secret
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
