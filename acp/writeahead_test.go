package acp

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestEmitterShowsToolCallOnlyWhenDurable: text goes out at once; a
// tool_call waits for the durable hook and is dropped if it fails.
func TestEmitterShowsToolCallOnlyWhenDurable(t *testing.T) {
	chunk := session.Event{Type: session.TypeAssistantChunk, Seq: 0,
		Data: session.MustData(session.AssistantChunkData{Turn: 1, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: "hi"}})}
	call := func(seq int64, id string) session.Event {
		return session.Event{Type: session.TypeToolCall, Seq: seq,
			Data: session.MustData(session.ToolCallData{Turn: 1, Step: 1, CallID: id, Name: "echo", Arguments: "{}"})}
	}
	tests := []struct {
		name    string
		durable error
		want    []string // sessionUpdate kinds sent
	}{
		{"durable", nil, []string{"agent_message_chunk", "tool_call"}},
		{"not durable", errors.New("fsync failed"), []string{"agent_message_chunk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var sent []string
			send := func(_ context.Context, u acpsdk.SessionUpdate) error {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case u.AgentMessageChunk != nil:
					sent = append(sent, "agent_message_chunk")
				case u.ToolCall != nil:
					sent = append(sent, "tool_call")
				default:
					sent = append(sent, "other")
				}
				return nil
			}
			count := func() int { mu.Lock(); defer mu.Unlock(); return len(sent) }
			release := make(chan struct{})
			var asked []int64
			var wg sync.WaitGroup
			em := newEmitter(newTranslator(nil), send, &wg, slog.New(slog.DiscardHandler))
			em.durable = func(_ context.Context, seq int64) error {
				asked = append(asked, seq)
				<-release
				return tt.durable
			}
			em.resume()
			for _, ev := range []session.Event{chunk, call(1, "c1")} {
				em.push(item{update: &agent.Update{Event: &ev}})
			}
			deadline := time.Now().Add(10 * time.Second)
			for count() < 1 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // would the tool_call slip out?
			if n := count(); n != 1 {
				t.Fatalf("%d updates sent before the call was durable, want 1 (the text)", n)
			}
			close(release)
			<-em.barrier()
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || asked[0] != 1 {
				t.Errorf("durable asked for %v, want [1] (tool calls only)", asked)
			}
			if len(sent) != len(tt.want) {
				t.Fatalf("sent %q, want %q", sent, tt.want)
			}
			for i := range sent {
				if sent[i] != tt.want[i] {
					t.Fatalf("sent %q, want %q", sent, tt.want)
				}
			}
		})
	}
}
