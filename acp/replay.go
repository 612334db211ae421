package acp

// This file defines how a session/load replay is sent: streamed event by
// event, with consecutive text chunks of one kind merged.

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
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
	thought  bool // the pending run is agent thought, else agent message
	text     strings.Builder
}

// add takes the next update of the replay, in order.
func (m *chunkMerger) add(u acpsdk.SessionUpdate) {
	text, thought, ok := plainChunk(u)
	if !ok {
		m.flush()
		m.send(u)
		return
	}
	if m.text.Len() > 0 && (thought != m.thought || m.text.Len()+len(text) > replayChunkLimit) {
		m.flush()
	}
	m.thought = thought
	m.text.WriteString(text)
}

// flush sends the pending run, if any.
func (m *chunkMerger) flush() {
	if m.text.Len() == 0 {
		return
	}
	text := m.text.String()
	m.text.Reset()
	if m.sendText != nil {
		if err := m.sendText(context.Background(), m.thought, text); err != nil {
			m.log.Debug("session update not sent", "err", err)
		}
		return
	}
	if m.thought {
		m.send(acpsdk.UpdateAgentThoughtText(text))
	} else {
		m.send(acpsdk.UpdateAgentMessageText(text))
	}
}

// plainChunk reports whether u is an agent message or thought chunk made
// of text alone (no metadata, annotations or message id to keep).
func plainChunk(u acpsdk.SessionUpdate) (text string, thought, ok bool) {
	plain := func(c acpsdk.ContentBlock) (string, bool) {
		t := c.Text
		if t == nil || t.Meta != nil || t.Annotations != nil || c.Image != nil || c.Audio != nil || c.ResourceLink != nil || c.Resource != nil {
			return "", false
		}
		return t.Text, true
	}
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Meta == nil && u.AgentMessageChunk.MessageId == nil &&
		u.UserMessageChunk == nil && u.AgentThoughtChunk == nil && u.ToolCall == nil && u.ToolCallUpdate == nil:
		text, ok = plain(u.AgentMessageChunk.Content)
		return text, false, ok
	case u.AgentThoughtChunk != nil && u.AgentThoughtChunk.Meta == nil && u.AgentThoughtChunk.MessageId == nil &&
		u.UserMessageChunk == nil && u.AgentMessageChunk == nil && u.ToolCall == nil && u.ToolCallUpdate == nil:
		text, ok = plain(u.AgentThoughtChunk.Content)
		return text, true, ok
	}
	return "", false, false
}

// textSendFunc sends an agent message (thought=false) or agent thought
// text chunk update of the emitter's session.
type textSendFunc func(ctx context.Context, thought bool, text string) error

// sendTextTo returns the fast path for the text chunks of a replay of
// session id. The SDK encodes an update by marshalling it, decoding the
// result into a map and marshalling that again, for the update and again
// for its content block, then twice more for the envelope: about ten
// passes over every byte of text, which dominates the replay of a large
// log. textChunkLine writes the same bytes in one pass, straight to the
// connection's writer (which keeps messages whole, see countingWriter).
func (s *Server) sendTextTo(id string) textSendFunc {
	return func(ctx context.Context, thought bool, text string) error {
		<-s.ready
		line, err := textChunkLine(id, thought, text)
		if err != nil {
			return err
		}
		_, err = s.out.Write(line)
		return err
	}
}

// textChunkLine encodes a session/update notification carrying one text
// chunk exactly as the SDK does: encoding/json escaping (HTML-safe),
// object keys in sorted order, one line.
func textChunkLine(id string, thought bool, text string) ([]byte, error) {
	sid, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
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
	txt, err := json.Marshal(text)
	if err != nil {
		return nil, err
	}
	kind := `"agent_message_chunk"`
	if thought {
		kind = `"agent_thought_chunk"`
	}
	var b bytes.Buffer
	b.Grow(len(txt) + len(sid) + 160)
	b.WriteString(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`)
	b.Write(sid)
	b.WriteString(`,"update":{"content":{"text":`)
	b.Write(txt)
	b.WriteString(`,"type":"text"},"sessionUpdate":`)
	b.WriteString(kind)
	b.WriteString("}}}\n")
	return b.Bytes(), nil
}
