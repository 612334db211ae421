package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Exit codes of the lock-probing child process.
const (
	childEnv       = "PERSISTENCE_TEST_LOCK_DIR" // with PERSISTENCE_TEST_LOCK_ID
	childOK        = 0
	childLocked    = 3
	childOtherFail = 4
)

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(lockChild(v))
	}
	if v := os.Getenv(repairChildEnv); v != "" {
		os.Exit(repairChild(v))
	}
	os.Exit(m.Run())
}

// lockChild runs in a re-executed test binary: it tries to Load a session
// and reports the outcome as its exit code.
func lockChild(v string) int {
	dir, id := v, os.Getenv("PERSISTENCE_TEST_LOCK_ID")
	ps, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return childOtherFail
	}
	defer ps.Close()
	_, err = ps.Load(context.Background(), id)
	var le *LockedError
	switch {
	case err == nil:
		return childOK
	case errors.As(err, &le):
		fmt.Fprintln(os.Stderr, err)
		return childLocked
	default:
		fmt.Fprintln(os.Stderr, err)
		return childOtherFail
	}
}

// testLogger logs to the test's output without timestamps.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	ps, err := Open(dir, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

// liveStore returns a deterministic session store persisted by ps.
func liveStore(t testing.TB, ps *Store) *session.Store {
	st := session.NewStore(&session.DeterministicSources{Epoch: 1_700_000_000_000})
	detach := ps.Attach(st)
	t.Cleanup(detach)
	return st
}

func mustAppend(t testing.TB, s *session.Session, typ string, data any, opts ...session.AppendOption) session.Event {
	t.Helper()
	ev, err := s.Append(typ, data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// appendToolTurn appends one complete turn: a user message, a step whose
// model reply calls a tool, the tool's result, and a final text step.
func appendToolTurn(t testing.TB, s *session.Session, turn int) {
	t.Helper()
	appendOpenToolTurn(t, s, turn, true)
	mustAppend(t, s, session.TypeStepStart, session.StepData{Turn: turn, Step: 2})
	mustAppend(t, s, session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 2, Chunk: session.Chunk{Type: session.ChunkText, Text: "The file <says> \"hi\"."}})
	mustAppend(t, s, session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 2, Message: session.Message{
		ID: s.NewID(), Role: session.RoleAssistant, Content: []session.Block{session.Text("The file <says> \"hi\".")},
		Source: session.Source{Kind: session.SourceModel, Provider: "scripted", Model: "scripted"},
	}, Usage: &session.Usage{InputTokens: 12, OutputTokens: 5}, Finish: "stop"})
	mustAppend(t, s, session.TypeStepEnd, session.StepData{Turn: turn, Step: 2})
	mustAppend(t, s, session.TypeTurnEnd, session.TurnEndData{Turn: turn, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
}

// appendOpenToolTurn appends the first part of a tool turn: up to the
// tool/call (and its result and step/end when answered).
func appendOpenToolTurn(t testing.TB, s *session.Session, turn int, answered bool) (callSeq int64) {
	t.Helper()
	mustAppend(t, s, session.TypeTurnStart, session.TurnData{Turn: turn})
	mustAppend(t, s, session.TypeUserMessage, session.Message{ID: s.NewID(), Role: session.RoleUser,
		Content: []session.Block{session.Text("read the file")}, Source: session.Source{Kind: session.SourceUser}})
	mustAppend(t, s, session.TypeStepStart, session.StepData{Turn: turn, Step: 1})
	callID := s.NewID()
	mustAppend(t, s, session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: 1, Chunk: session.Chunk{Type: session.ChunkToolCall, ID: callID, Name: "read", Arguments: `{"path":"a.txt"}`}})
	mustAppend(t, s, session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: 1, Message: session.Message{
		ID: s.NewID(), Role: session.RoleAssistant,
		Content: []session.Block{{Type: session.BlockToolCall, ID: callID, Name: "read", Arguments: `{"path":"a.txt"}`}},
		Source:  session.Source{Kind: session.SourceModel, Provider: "scripted", Model: "scripted"},
	}, Finish: "tool-calls"})
	call := mustAppend(t, s, session.TypeToolCall, session.ToolCallData{Turn: turn, Step: 1, CallID: callID, Name: "read", Arguments: `{"path":"a.txt"}`})
	if !answered {
		return call.Seq
	}
	mustAppend(t, s, session.TypeToolResult, session.ToolResultData{Turn: turn, Step: 1, Message: session.Message{
		ID: s.NewID(), Role: session.RoleUser,
		Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: callID, Content: []session.Block{session.Text("hi")}}},
		Source:  session.Source{Kind: session.SourceTool, CallID: callID},
	}}, session.WithSources(call.Seq))
	mustAppend(t, s, session.TypeStepEnd, session.StepData{Turn: turn, Step: 1})
	return call.Seq
}

// writeSession creates dir's store file for a session with one complete
// tool turn (plus extra, if set) and returns the file path and its events.
func writeSession(t testing.TB, dir, id string, extra func(s *session.Session)) (string, []session.Event) {
	t.Helper()
	ps, err := Open(dir, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	st := session.NewStore(&session.DeterministicSources{Epoch: 1_700_000_000_000})
	detach := ps.Attach(st)
	defer detach()
	s, err := st.Create(session.Header{ID: id, Cwd: "/work"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendToolTurn(t, s, 1)
	if extra != nil {
		extra(s)
	}
	events := s.MustEvents()
	if err := st.Remove(id); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "sessions", id+".jsonl"), events
}

// eventLines renders events as JSONL, as the store writes them.
func eventLines(t testing.TB, events ...session.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := encodeEvents(&buf, events); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func headerLine(t testing.TB, id string) []byte {
	t.Helper()
	b, err := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1_700_000_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// sameEvents fails unless got and want are equal event for event, both as
// Go values and as JSON.
func sameEvents(t testing.TB, got, want []session.Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d\ngot:  %s\nwant: %s", len(got), len(want), js(got), js(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("event %d differs:\ngot:  %s\nwant: %s", i, js(got[i]), js(want[i]))
		}
	}
	if js(got) != js(want) {
		t.Fatalf("JSON differs:\ngot:  %s\nwant: %s", js(got), js(want))
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
