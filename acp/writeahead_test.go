package acp

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestEmitterShowsOnlyWhatIsDurable: a text chunk waits for the group
// commit (durableText, or durable without one) and a tool_call for the
// durable hook; each is dropped if its hook fails. The test decides on
// signals: each hook reports the seq it was asked for and blocks until
// released, and the count of sent updates is read while it blocks (the
// drain sends only after the hook returns).
func TestEmitterShowsOnlyWhatIsDurable(t *testing.T) {
	chunk := session.Event{Type: session.TypeAssistantChunk, Seq: 0,
		Data: session.MustData(session.AssistantChunkData{Turn: 1, Step: 1, Chunk: session.Chunk{Type: session.ChunkText, Text: "hi"}})}
	call := session.Event{Type: session.TypeToolCall, Seq: 1,
		Data: session.MustData(session.ToolCallData{Turn: 1, Step: 1, CallID: "c1", Name: "echo", Arguments: "{}"})}
	fsync := errors.New("fsync failed")
	tests := []struct {
		name     string
		group    bool  // durableText is set
		textErr  error // what the chunk's hook answers
		callErr  error
		wantText string   // hook asked for seq 0: "text" or "durable"
		want     []string // sessionUpdate kinds sent
	}{
		{"durable", true, nil, nil, "text", []string{"agent_message_chunk", "tool_call"}},
		{"text not durable", true, fsync, nil, "text", []string{"tool_call"}},
		{"call not durable", true, nil, fsync, "text", []string{"agent_message_chunk"}},
		{"no group commit", false, nil, nil, "durable", []string{"agent_message_chunk", "tool_call"}},
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
			type ask struct {
				hook string
				seq  int64
			}
			asked := make(chan ask)
			release := make(chan error)
			hook := func(name string) func(context.Context, int64) error {
				return func(_ context.Context, seq int64) error {
					asked <- ask{name, seq}
					return <-release
				}
			}
			var wg sync.WaitGroup
			em := newEmitter(newTranslator(nil), send, &wg, slog.New(slog.DiscardHandler))
			em.durable = hook("durable")
			if tt.group {
				em.durableText = hook("text")
			}
			em.resume()
			for _, ev := range []session.Event{chunk, call} {
				em.push(item{update: &agent.Update{Event: &ev}})
			}
			if a := <-asked; a != (ask{tt.wantText, 0}) {
				t.Fatalf("first hook call %+v, want {%s 0}", a, tt.wantText)
			}
			if n := count(); n != 0 {
				t.Fatalf("%d updates sent before the chunk was durable, want 0", n)
			}
			release <- tt.textErr
			if a := <-asked; a != (ask{"durable", 1}) {
				t.Fatalf("second hook call %+v, want {durable 1}", a)
			}
			if n, want := count(), len(tt.want)-boolInt(tt.callErr == nil); n != want {
				t.Fatalf("%d updates sent before the call was durable, want %d", n, want)
			}
			release <- tt.callErr
			<-em.barrier()
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(sent, tt.want) {
				t.Fatalf("sent %q, want %q", sent, tt.want)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
