package session

import (
	"encoding/json"
	"testing"
)

// FuzzHistoryCompaction: any compaction payload (a log is untrusted input
// after a copy or a hand edit) either derives a history or fails with a
// FormatError; it never panics, and a summary never leaves covered
// messages in the view.
func FuzzHistoryCompaction(f *testing.F) {
	f.Add([]byte(`{"id":"c1","trigger":"auto","outcome":"completed","upTo":1,"summary":"s","stubUpTo":2}`))
	f.Add([]byte(`{"outcome":"completed","stubUpTo":99}`))
	f.Add([]byte(`{"outcome":"failed","upTo":-5,"summary":"x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		user := MustData(Message{ID: "u", Role: RoleUser, Content: []Block{Text("hi")}, Source: Source{Kind: SourceUser}})
		call := MustData(AssistantMessageData{Message: Message{ID: "a", Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "c", Name: "read", Arguments: "{}"}}}})
		res := MustData(ToolResultData{Message: Message{ID: "r", Role: RoleUser, Source: Source{Kind: SourceTool, CallID: "c"},
			Content: []Block{{Type: BlockToolResult, ToolCallID: "c", Content: []Block{Text("body")}}}}})
		evs := []Event{
			{Type: TypeUserMessage, Seq: 0, Data: user, SurfaceOp: AppendOp},
			{Type: TypeAssistantMessage, Seq: 1, Data: call, SurfaceOp: AppendOp},
			{Type: TypeToolResult, Seq: 2, Data: res, SurfaceOp: AppendOp},
			{Type: TypeCompaction, Seq: 3, Data: data},
			{Type: TypeUserMessage, Seq: 4, Data: user, SurfaceOp: AppendOp},
		}
		h, err := History(evs)
		if err != nil {
			if _, ok := err.(*FormatError); !ok {
				t.Fatalf("error %T %v, want *FormatError", err, err)
			}
			return
		}
		var d CompactionData
		_ = json.Unmarshal(data, &d)
		if d.Outcome == CompactionCompleted && d.Summary != "" {
			for _, m := range h {
				if m.Seq <= d.UpTo && m.Message.Source.Kind != SourceCompaction {
					t.Fatalf("message %d covered by the summary (upTo %d) is still in the view", m.Seq, d.UpTo)
				}
			}
		}
	})
}
