package acp

// This file defines how a session/load replay is sent: streamed event by
// event, with consecutive text chunks of one kind merged.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
)

// replayChunkLimit bounds the text merged into one replayed chunk update.
const replayChunkLimit = 64 << 10

// chunkMerger merges the runs of plain text chunks of a replay (agent
// message or agent thought) into one update per run. A model streams its
// reply token by token, so a large log holds hundreds of thousands of
// tiny chunks; replaying each as its own notification costs a JSON
// encoding and a write apiece, while the client only concatenates them.
// The merged replay carries the same text in the same order; live
// streaming is not merged. The emitter flushes at every event that is not
// an assistant/chunk, so a run never spans two model replies (the chunks
// of one reply are consecutive events).
type chunkMerger struct {
	send     func(acpsdk.SessionUpdate)
	sendText textSendFunc // fast path for the merged runs; nil: send
	log      *slog.Logger
	thought  bool   // the pending run is agent thought, else agent message
	mid      string // the pending run's messageId ("" none)
	text     []byte // the pending run; its storage is reused for the next
}

// add takes the next update of the replay, in order.
func (m *chunkMerger) add(u acpsdk.SessionUpdate) {
	text, thought, mid, ok := plainChunk(u)
	if !ok {
		m.flush()
		m.send(u)
		return
	}
	if len(m.text) > 0 && (thought != m.thought || mid != m.mid || len(m.text)+len(text) > replayChunkLimit) {
		m.flush()
	}
	m.thought, m.mid = thought, mid
	m.text = append(m.text, text...)
}

// flush sends the pending run, if any.
func (m *chunkMerger) flush() {
	if len(m.text) == 0 {
		return
	}
	text := string(m.text)
	m.text = m.text[:0]
	if m.sendText != nil {
		if err := m.sendText(context.Background(), m.thought, m.mid, text); err != nil {
			m.log.Debug("session update not sent", "err", err)
		}
		return
	}
	if m.thought {
		m.send(acpsdk.UpdateAgentThoughtText(text))
	} else {
		u := acpsdk.UpdateAgentMessageText(text)
		if m.mid != "" {
			u.AgentMessageChunk.MessageId = acpsdk.Ptr(m.mid)
		}
		m.send(u)
	}
}

// plainChunk reports whether u is an agent message or thought chunk made
// of text alone (no metadata or annotations to keep), and its messageId
// (an agent message's only: runs merge within one message).
func plainChunk(u acpsdk.SessionUpdate) (text string, thought bool, mid string, ok bool) {
	plain := func(c acpsdk.ContentBlock) (string, bool) {
		t := c.Text
		if t == nil || t.Meta != nil || t.Annotations != nil || c.Image != nil || c.Audio != nil || c.ResourceLink != nil || c.Resource != nil {
			return "", false
		}
		return t.Text, true
	}
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Meta == nil &&
		u.UserMessageChunk == nil && u.AgentThoughtChunk == nil && u.ToolCall == nil && u.ToolCallUpdate == nil:
		text, ok = plain(u.AgentMessageChunk.Content)
		if p := u.AgentMessageChunk.MessageId; p != nil {
			mid = *p
		}
		return text, false, mid, ok
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Meta == nil && u.AgentThoughtChunk.MessageId == nil &&
		u.UserMessageChunk == nil && u.AgentMessageChunk == nil && u.ToolCall == nil && u.ToolCallUpdate == nil:
		text, ok = plain(u.AgentThoughtChunk.Content)
		return text, true, "", ok
	}
	return "", false, "", false
}

// textSendFunc sends an agent message (thought=false) or agent thought
// text chunk update of the emitter's session; mid is its messageId ("":
// none).
type textSendFunc func(ctx context.Context, thought bool, mid, text string) error

// sendTextTo returns the fast path for the text chunks of a replay of
// session id. The SDK encodes an update by marshalling it, decoding the
// result into a map and marshalling that again, for the update and again
// for its content block, then twice more for the envelope: about ten
// passes over every byte of text, which dominates the replay of a large
// log. textChunkLine writes the same bytes in one pass, straight to the
// connection's writer (which keeps messages whole, see countingWriter).
func (s *Server) sendTextTo(id string) textSendFunc {
	return func(ctx context.Context, thought bool, mid, text string) error {
		<-s.ready
		buf := lineBuffers.Get().(*bytes.Buffer)
		defer lineBuffers.Put(buf)
		buf.Reset()
		if err := appendTextChunkLine(buf, id, thought, mid, text); err != nil {
			return err
		}
		_, err := s.out.Write(buf.Bytes())
		if buf.Cap() > 4*replayChunkLimit {
			*buf = bytes.Buffer{} // do not pool an outsized buffer
		}
		return err
	}
}

// sendRawTo returns the sender of updates the SDK has no type for
// (compaction_update): the session/update notification is encoded here and
// written whole to the connection's writer, like sendTextTo's lines.
func (s *Server) sendRawTo(id string) rawSendFunc {
	return func(_ context.Context, update map[string]any) error {
		<-s.ready
		b, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "method": acpsdk.ClientMethodSessionUpdate,
			"params": map[string]any{"sessionId": id, "update": update},
		})
		if err != nil {
			return err
		}
		_, err = s.out.Write(append(b, '\n'))
		return err
	}
}

// rawSendFunc sends one raw session/update payload.
type rawSendFunc func(ctx context.Context, update map[string]any) error

// lineBuffers recycles the encoding buffers of textChunkLine, so a large
// replay does not allocate a line per update.
var lineBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// textChunkLine is appendTextChunkLine into a new slice.
func textChunkLine(id string, thought bool, mid, text string) ([]byte, error) {
	var b bytes.Buffer
	err := appendTextChunkLine(&b, id, thought, mid, text)
	return b.Bytes(), err
}

// appendTextChunkLine encodes a session/update notification carrying one
// text chunk exactly as the SDK does (encoding/json escaping, HTML-safe;
// object keys in sorted order; one line) and appends it to b.
func appendTextChunkLine(b *bytes.Buffer, id string, thought bool, mid, text string) error {
	if !utf8.ValidString(text) {
		// The SDK's round trip through a map turns each invalid byte into
		// a literal U+FFFD (json.Marshal alone would write \ufffd).
		// Ranging over a string yields RuneError for each invalid byte.
		var b strings.Builder
		for _, r := range text {
			b.WriteRune(r)
		}
		text = b.String()
	}
	kind := `"agent_message_chunk"`
	if thought {
		kind = `"agent_thought_chunk"`
	}
	// An Encoder writes each value followed by a newline; the newline is
	// cut after each value.
	enc := json.NewEncoder(b)
	str := func(v string) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1)
		return nil
	}
	b.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`)
	if err := str(id); err != nil {
		return err
	}
	b.WriteString(`,"update":{"content":{"text":`)
	if err := str(text); err != nil {
		return err
	}
	b.WriteString(`,"type":"text"},`)
	if mid != "" {
		b.WriteString(`"messageId":`)
		if err := str(mid); err != nil {
			return err
		}
		b.WriteString(`,`)
	}
	b.WriteString(`"sessionUpdate":`)
	b.WriteString(kind)
	b.WriteString("}}}\n")
	return nil
}
