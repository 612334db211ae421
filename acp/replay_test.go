package acp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestReplayMergesChunkRuns: a replay sends one update per run of text
// (or thought) chunks of one model reply, never merging across replies.
func TestReplayMergesChunkRuns(t *testing.T) {
	var seq int64
	ev := func(typ string, data any) session.Event {
		e := session.Event{Type: typ, Seq: seq, Data: session.MustData(data)}
		seq++
		return e
	}
	chunk := func(turn, step int, typ, text string) session.Event {
		return ev(session.TypeAssistantChunk, session.AssistantChunkData{Turn: turn, Step: step, Chunk: session.Chunk{Type: typ, Text: text}})
	}
	msg := func(turn, step int) session.Event {
		return ev(session.TypeAssistantMessage, session.AssistantMessageData{Turn: turn, Step: step})
	}
	events := []session.Event{
		ev(session.TypeTurnStart, session.TurnData{Turn: 1}),
		chunk(1, 1, session.ChunkReasoning, "let me "),
		chunk(1, 1, session.ChunkReasoning, "think"),
		chunk(1, 1, session.ChunkText, "Hello "),
		chunk(1, 1, session.ChunkText, "there, "),
		chunk(1, 1, session.ChunkText, "friend."),
		msg(1, 1),
		chunk(1, 2, session.ChunkText, "Second "),
		chunk(1, 2, session.ChunkText, "reply."),
		msg(1, 2),
		ev(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}}),
	}
	var mu sync.Mutex
	var got []string
	send := func(_ context.Context, u acpsdk.SessionUpdate) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case u.AgentMessageChunk != nil:
			got = append(got, "message:"+u.AgentMessageChunk.Content.Text.Text)
		case u.AgentThoughtChunk != nil:
			got = append(got, "thought:"+u.AgentThoughtChunk.Content.Text.Text)
		default:
			got = append(got, "other")
		}
		return nil
	}
	var wg sync.WaitGroup
	em := newEmitter(newTranslator(nil), send, &wg, slog.New(slog.DiscardHandler))
	em.push(item{replay: events})
	em.resume()
	<-em.barrier()
	wg.Wait()
	want := []string{"thought:let me think", "message:Hello there, friend.", "message:Second reply."}
	if !slices.Equal(got, want) {
		t.Errorf("replay sent %q, want %q", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the SDK's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) take() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.b
	s.b = nil
	return b
}

// TestTextChunkLineMatchesSDK: the replay's fast path writes exactly the
// bytes the SDK writes for the same update.
func TestTextChunkLineMatchesSDK(t *testing.T) {
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	defer pw.Close()
	conn := acpsdk.NewAgentSideConnection((*Server)(nil), out, pr)
	texts := []string{"", "plain", "<html> & \"quotes\" \\ back", "line\nbreak\ttab\x01ctl", "ünïcødé ✓ \u2028\u2029", "bad utf8 \xff\xfe"}
	for _, text := range texts {
		for _, kind := range []struct {
			thought bool
			mid     string
		}{{false, ""}, {true, ""}, {false, "0f8fad5b-d9cb-469f-a165-70867728950e"}} {
			thought, mid := kind.thought, kind.mid
			u := acpsdk.UpdateAgentMessageText(text)
			if thought {
				u = acpsdk.UpdateAgentThoughtText(text)
			}
			if mid != "" {
				u.AgentMessageChunk.MessageId = acpsdk.Ptr(mid)
			}
			if err := conn.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: "s-1", Update: u}); err != nil {
				t.Fatal(err)
			}
			want := out.take()
			got, err := textChunkLine("s-1", thought, mid, text)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("text %q thought %v:\n got %s\nwant %s", text, thought, got, want)
			}
		}
	}
}
