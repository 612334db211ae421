package agent

// This file defines the final assistant output rule.

import (
	"strings"

	"github.com/acp-agent/acp-agent/agent/session"
)

// FinalOutput applies the final assistant output rule of
// ../shared/spec/subagent-contract.md §2.9 to events (a turn, or a child's
// own suffix): the content of the last assistant/message whose content is
// not empty (tool-call blocks included); else the text-delta chunks of all
// assistant/chunk events concatenated into one text block; else an empty,
// non-nil slice. The stop reason plays no part. Undecodable events are
// skipped.
func FinalOutput(events []session.Event) []session.Block {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != session.TypeAssistantMessage {
			continue
		}
		d, err := session.DecodeData[session.AssistantMessageData](events[i])
		if err != nil || len(d.Message.Content) == 0 {
			continue
		}
		return d.Message.Content
	}
	var sb strings.Builder
	for _, ev := range events {
		if ev.Type != session.TypeAssistantChunk {
			continue
		}
		d, err := session.DecodeData[session.AssistantChunkData](ev)
		if err != nil || d.Chunk.Type != session.ChunkText {
			continue
		}
		sb.WriteString(d.Chunk.Text)
	}
	if sb.Len() > 0 {
		return []session.Block{session.Text(sb.String())}
	}
	return []session.Block{}
}
