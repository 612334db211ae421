package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// FuzzPromptBlocks feeds arbitrary prompt JSON through the SDK's decoding
// and our content mapping: it must never panic, accepted blocks are only
// the advertised kinds, and an image is accepted only where the session's
// model takes images (the third argument), with data and an image/* type.
func FuzzPromptBlocks(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","text":"hi"}]`,
		`[{"type":"resource_link","name":"a.go","uri":"file:///a.go"}]`,
		`[{"type":"resource","resource":{"uri":"file:///a","text":"x","mimeType":"text/plain"}}]`,
		`[{"type":"resource","resource":{"uri":"file:///a","blob":"AAAA"}}]`,
		`[{"type":"image","data":"AAAA","mimeType":"image/png"}]`,
		`[]`, `[{}]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var blocks []acpsdk.ContentBlock
		if json.Unmarshal(data, &blocks) != nil {
			return
		}
		images := len(data)%2 == 0
		out, err := promptBlocks(blocks, 1<<16, images)
		if err != nil {
			if toRequestError(err) == nil {
				t.Fatal("error mapped to nil")
			}
			return
		}
		for _, b := range out {
			switch b.Type {
			case session.BlockText, session.BlockResourceLink, session.BlockResource:
			case session.BlockImage:
				if !images {
					t.Fatal("image accepted for a model without image input")
				}
				if b.Data == "" || !strings.HasPrefix(b.MimeType, "image/") {
					t.Fatalf("image accepted without data or an image/* type: %+v", b)
				}
			default:
				t.Fatalf("accepted block type %q", b.Type)
			}
		}
	})
}

// FuzzTranslateEvent feeds arbitrary payloads of every event type through
// the translator (replay and live): it must never panic, and every update
// must marshal (exactly one variant set).
func FuzzTranslateEvent(f *testing.F) {
	f.Add(session.TypeToolCall, []byte(`{"callId":"c","name":"subagent","arguments":"{\"description\":\"x\"}"}`))
	f.Add(session.TypeToolResult, []byte(`{"message":{"content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"ok"}]}]}}`))
	f.Add(session.TypeAssistantChunk, []byte(`{"chunk":{"type":"text-delta","text":"hi"}}`))
	f.Add(session.TypeUserMessage, []byte(`{"content":[{"type":"resource-link","uri":"u"}],"source":{"kind":"user"}}`))
	f.Add(session.TypeSessionTitle, []byte(`{"title":"t"}`))
	f.Add(session.TypeTurnEnd, []byte(`{}`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		tr := newTranslator(nil)
		for i, replay := range []bool{true, false} {
			ev := session.Event{Type: typ, Seq: int64(i), Data: data}
			for _, u := range tr.event(ev, replay) {
				if _, err := json.Marshal(u); err != nil {
					t.Fatalf("update does not marshal: %v", err)
				}
			}
		}
	})
}

// FuzzWireCounter checks the request/response counting never panics on
// arbitrary input split at arbitrary points.
func FuzzWireCounter(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n{bad\n"), 7)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), 3)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		c := newWireCounter()
		r := &countingReader{r: io.MultiReader(bytes.NewReader(data[:clamp(split, len(data))]), bytes.NewReader(data[clamp(split, len(data)):])), c: c}
		_, _ = io.Copy(io.Discard, r)
		_ = isResponse(data)
	})
}

func clamp(n, max int) int {
	if n < 0 {
		n = -n
	}
	if max == 0 {
		return 0
	}
	return n % (max + 1)
}
