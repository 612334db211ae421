package acp

// This file defines how a session/load replay is sent: streamed event by
// event, with consecutive text chunks of one kind merged.

import (
	"strings"

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
	send    func(acpsdk.SessionUpdate)
	thought bool // the pending run is agent thought, else agent message
	text    strings.Builder
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
