package recording_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/recording"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
)

// chunked streams its chunks, then fails with err if set. When gate is
// set it waits on it before the first chunk.
type chunked struct {
	chunks []session.Chunk
	err    error
	gate   chan struct{}
}

func (c chunked) Stream(ctx context.Context, _ model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		if c.gate != nil {
			<-c.gate
		}
		for _, ch := range c.chunks {
			if !yield(ch, nil) {
				return
			}
		}
		if c.err != nil {
			yield(session.Chunk{}, c.err)
		}
	}
}

func call(t *testing.T, m model.Model, c model.Caller) []session.Chunk {
	t.Helper()
	var got []session.Chunk
	for ch, err := range m.Stream(t.Context(), model.Request{Caller: c}) {
		if err != nil {
			break
		}
		got = append(got, ch)
	}
	return got
}

// What a call streamed becomes its script reply: text, reasoning of every
// block, tool calls assembled from their pieces, the last usage, and a
// finish only when it differs from the one the reply implies. The chunks
// pass through unchanged.
func TestRecordedReplies(t *testing.T) {
	usage := &session.Usage{InputTokens: 7, OutputTokens: 3}
	tests := []struct {
		name   string
		chunks []session.Chunk
		want   scripted.Reply
	}{
		{"text", []session.Chunk{
			{Type: session.ChunkText, Text: "hel"}, {Type: session.ChunkText, Text: "lo"},
			{Type: session.ChunkFinish, Finish: model.FinishStop},
		}, scripted.Reply{Text: "hello"}},
		{"signed reasoning blocks", []session.Chunk{
			{Type: session.ChunkReasoning, Text: "one "}, {Type: session.ChunkReasoning, Signature: "sig1"},
			{Type: session.ChunkReasoning, Data: "opaque"},
			{Type: session.ChunkReasoning, Text: "two"},
			{Type: session.ChunkText, Text: "answer"},
		}, scripted.Reply{Text: "answer", Reasoning: "one two"}},
		{"tool calls in pieces", []session.Chunk{
			{Type: session.ChunkToolCall, Index: 0, ID: "c1", Name: "read", Arguments: `{"pa`},
			{Type: session.ChunkToolCall, Index: 1, ID: "c2", Name: "bash", Arguments: `{"command":"ls"}`},
			{Type: session.ChunkToolCall, Index: 0, Arguments: `th":"a"}`},
			{Type: session.ChunkFinish, Finish: model.FinishToolCalls},
		}, scripted.Reply{ToolCalls: []scripted.ToolCall{
			{ID: "c1", Name: "read", Arguments: `{"path":"a"}`},
			{ID: "c2", Name: "bash", Arguments: `{"command":"ls"}`},
		}}},
		{"finish differing from the implied one", []session.Chunk{
			{Type: session.ChunkText, Text: "cut"}, {Type: session.ChunkFinish, Finish: model.FinishLength},
		}, scripted.Reply{Text: "cut", Finish: model.FinishLength}},
		{"usage on a usage chunk and on a finish", []session.Chunk{
			{Type: session.ChunkText, Text: "x"},
			{Type: session.ChunkUsage, Usage: &session.Usage{InputTokens: 1}},
			{Type: session.ChunkFinish, Finish: model.FinishStop, Usage: usage},
		}, scripted.Reply{Text: "x", Usage: &scripted.Usage{Input: 7, Output: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := recording.New(recording.Options{})
			got := call(t, rec.Wrap(chunked{chunks: tt.chunks}), model.Caller{SessionID: "s1", ScriptKey: "main"})
			if !reflect.DeepEqual(got, tt.chunks) {
				t.Errorf("chunks passed through = %+v, want %+v", got, tt.chunks)
			}
			replies := rec.Replies()["main"]
			if len(replies) != 1 || !reflect.DeepEqual(replies[0], tt.want) {
				t.Errorf("recorded %+v, want %+v", replies, tt.want)
			}
			if rec.KeyOf("s1") != "main" {
				t.Errorf("KeyOf(s1) = %q", rec.KeyOf("s1"))
			}
		})
	}
}

// A generic failure keeps its message (redacted); a failure after chunks
// says so.
func TestRecordedError(t *testing.T) {
	rec := recording.New(recording.Options{Secrets: []string{"sk-secret-99"}})
	m := rec.Wrap(chunked{err: errors.New("bad key sk-secret-99")})
	call(t, m, model.Caller{ScriptKey: "main"})
	got := rec.Replies()["main"][0]
	if got.Error != "bad key [REDACTED]" || got.ErrorAfterChunks || got.Hang || got.StreamBroken || got.ContextLengthExceeded {
		t.Errorf("reply = %+v", got)
	}
}

// Calls are kept by script key and call index; an index no call was
// recorded for replays as a failure saying so; the first of two different
// answers to one key and index is kept and the conflict noted.
func TestRepliesByKeyAndIndex(t *testing.T) {
	rec := recording.New(recording.Options{})
	say := func(text string) model.Model {
		return rec.Wrap(chunked{chunks: []session.Chunk{{Type: session.ChunkText, Text: text}}})
	}
	call(t, say("zero"), model.Caller{SessionID: "a", ScriptKey: "main", Call: 0})
	call(t, say("two"), model.Caller{SessionID: "a", ScriptKey: "main", Call: 2})
	call(t, say("child"), model.Caller{SessionID: "b", ScriptKey: "Child", Call: 0})
	call(t, say("twin"), model.Caller{SessionID: "c", ScriptKey: "Child", Call: 0})
	call(t, say("child"), model.Caller{SessionID: "d", ScriptKey: "Child", Call: 0})

	got := rec.Replies()
	if len(got["main"]) != 3 || got["main"][0].Text != "zero" || got["main"][2].Text != "two" {
		t.Fatalf("main = %+v", got["main"])
	}
	if !strings.Contains(got["main"][1].Error, "not recorded: session call 1") {
		t.Errorf("the gap replays as %+v", got["main"][1])
	}
	if len(got["Child"]) != 1 || got["Child"][0].Text != "child" {
		t.Errorf("Child = %+v, want the first answer kept", got["Child"])
	}
	notes := rec.Notes()
	if len(notes) != 1 || !strings.Contains(notes[0], `script key "Child" call 0 was answered twice, differently`) {
		t.Errorf("notes = %q, want one conflict (the same answer twice is none)", notes)
	}
}

// Keep leaves out the calls of other sessions; compaction summaries are
// recorded under their own key but do not name a session's key.
func TestKeepAndCompactionKeys(t *testing.T) {
	rec := recording.New(recording.Options{Keep: func(id string) bool { return id != "other" }})
	m := rec.Wrap(chunked{chunks: []session.Chunk{{Type: session.ChunkText, Text: "x"}}})
	call(t, m, model.Caller{SessionID: "s", ScriptKey: "main/compact"})
	call(t, m, model.Caller{SessionID: "s", ScriptKey: "main"})
	call(t, m, model.Caller{SessionID: "other", ScriptKey: "elsewhere"})
	got := rec.Replies()
	if _, ok := got["elsewhere"]; ok {
		t.Error("a session Keep refused was recorded")
	}
	if len(got["main/compact"]) != 1 || len(got["main"]) != 1 {
		t.Errorf("replies = %+v", got)
	}
	if rec.KeyOf("s") != "main" || rec.KeyOf("other") != "" {
		t.Errorf("KeyOf = %q, %q", rec.KeyOf("s"), rec.KeyOf("other"))
	}
}

// InFlight reports the call a session has open, not its compactions.
func TestInFlight(t *testing.T) {
	rec := recording.New(recording.Options{})
	gate := make(chan struct{})
	m := rec.Wrap(chunked{chunks: []session.Chunk{{Type: session.ChunkText, Text: "x"}}, gate: gate})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range m.Stream(context.Background(), model.Request{Caller: model.Caller{SessionID: "s", ScriptKey: "main", Call: 4}}) {
		}
	})
	wg.Go(func() {
		for range m.Stream(context.Background(), model.Request{Caller: model.Caller{SessionID: "t", ScriptKey: "t/compact", Call: 9}}) {
		}
	})
	// The main call enters before its model streams; wait for it without
	// timing: InFlight turns true when it has.
	for {
		if call, ok := rec.InFlight("s"); ok {
			if call != 4 {
				t.Errorf("InFlight(s) = %d, want 4", call)
			}
			break
		}
		runtime.Gosched()
	}
	if _, ok := rec.InFlight("t"); ok {
		t.Error("a compaction summary counts as the session's call in flight")
	}
	close(gate)
	wg.Wait()
	if call, ok := rec.InFlight("s"); ok || call != 4 {
		t.Errorf("after the call InFlight(s) = %d, %v; want 4, false", call, ok)
	}
}

// The files tool calls name are snapshotted once, before the first call
// names them, within the caps; what is left out is noted.
func TestSnapshots(t *testing.T) {
	cwd := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cwd, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cwd, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", []byte("first"))
	write("sub/b.txt", []byte("bee"))
	write("big.txt", []byte(strings.Repeat("x", 40)))
	write("bin.dat", []byte{0xff, 0xfe, 0x00})
	write("fill1.txt", []byte(strings.Repeat("y", 30)))
	write("fill2.txt", []byte(strings.Repeat("z", 30)))
	if err := os.Mkdir(filepath.Join(cwd, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := recording.New(recording.Options{Cwd: cwd, MaxFileBytes: 32, MaxTotalBytes: 60})
	// A reply naming files copies nothing: only a tool's allowed touch
	// does.
	call(t, rec.Wrap(chunked{chunks: []session.Chunk{{Type: session.ChunkToolCall, ID: "0", Name: "read", Arguments: `{"path":"fill2.txt"}`}}}), model.Caller{ScriptKey: "main", Call: 0})
	if got := rec.Files(); len(got) != 0 {
		t.Fatalf("a reply naming a file snapshotted it: %q", got)
	}
	touch := func(rel string) { rec.Touched("s", filepath.Join(cwd, rel)) }
	for _, rel := range []string{"a.txt", "sub/b.txt", "new.txt", "fill1.txt", "big.txt", "bin.dat", "dir", "../outside.txt"} {
		touch(rel)
	}
	call(t, rec.Wrap(chunked{chunks: []session.Chunk{{Type: session.ChunkToolCall, ID: "9", Name: "bash", Arguments: `{"command":"cat fill2.txt"}`}}}), model.Caller{ScriptKey: "main", Call: 1})
	// A later change is not seen: the first state is the replay's.
	write("a.txt", []byte("changed"))
	for _, rel := range []string{"a.txt", "fill1.txt", "fill2.txt"} {
		touch(rel)
	}
	rec.AddFile("sub/b.txt") // already there: unchanged
	rec.AddFile("../escape")

	want := map[string]string{"a.txt": "first", "sub/b.txt": "bee", "fill1.txt": strings.Repeat("y", 30)}
	if got := rec.Files(); !reflect.DeepEqual(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
	notes := strings.Join(rec.Notes(), "\n")
	for _, s := range []string{
		"big.txt: 40 bytes, over the 32-byte file cap",
		"bin.dat: not UTF-8 text",
		"dir: not a regular file",
		"outside.txt: outside the working directory",
		"fill2.txt: 30 bytes, past the 60-byte snapshot cap",
		"the session ran commands (bash)",
	} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	if strings.Count(notes, "bash") != 1 {
		t.Errorf("the commands note is made more than once:\n%s", notes)
	}
}

// A file no tool call names can be added (agent definitions, settings);
// a cwd learned after New applies to later snapshots.
func TestAddFileAndSetCwd(t *testing.T) {
	cwd := t.TempDir()
	if err := os.WriteFile(filepath.Join(cwd, "agent.md"), []byte("---\nname: x\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := recording.New(recording.Options{})
	rec.SetCwd(cwd)
	rec.AddFile("agent.md")
	rec.AddFile("missing.md")
	if got := rec.Files(); !reflect.DeepEqual(got, map[string]string{"agent.md": "---\nname: x\n---\n"}) {
		t.Errorf("files = %q", got)
	}
	if n := rec.Notes(); len(n) != 0 {
		t.Errorf("a missing file is noted: %q", n)
	}
	if got := rec.Redact("Bearer abcdefgh"); got != "Bearer "+recording.Redacted {
		t.Errorf("Redact = %q", got)
	}
}
