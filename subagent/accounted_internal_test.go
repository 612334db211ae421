package subagent

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestDelegatedChildren: the children a parent's log names are found in a
// start tool's raw output (continuable and foreground) and, for a failed
// run that has no raw output, in the child link of its display; each once,
// in log order; other results name none.
func TestDelegatedChildren(t *testing.T) {
	result := func(d session.ToolResultData) session.Event {
		return session.Event{Type: session.TypeToolResult, Data: session.MustData(d)}
	}
	events := []session.Event{
		result(session.ToolResultData{Raw: delegation.ContinuableResult("c1")}),
		result(session.ToolResultData{Raw: map[string]any{"kind": "other"}}),
		result(session.ToolResultData{Raw: delegation.ForegroundResult("c2", "done")}),
		result(session.ToolResultData{Display: &session.ToolDisplay{Meta: delegation.ChildLink("c3", "one-shot", 1)}}),
		result(session.ToolResultData{Raw: delegation.ContinuableResult("c1")}),
		result(session.ToolResultData{Raw: delegation.ContinuableResult("../bad")}),
		{Type: session.TypeUserMessage, Data: session.MustData(map[string]any{"subagentId": "c9"})},
	}
	if got, want := delegatedChildren(events).ids, []string{"c1", "c2", "c3"}; !slices.Equal(got, want) {
		t.Errorf("delegatedChildren = %v, want %v", got, want)
	}
}

// TestResultChildMatchesFullDecode: the narrow decode of a tool/result
// names the same child as decoding the whole session.ToolResultData and
// reading it with delegation.ResultChild and the display's child link.
func TestResultChildMatchesFullDecode(t *testing.T) {
	for _, data := range resultChildSeeds {
		gotID, gotOK := resultChild(json.RawMessage(data))
		wantID, wantOK := fullResultChild(json.RawMessage(data))
		if gotID != wantID || gotOK != wantOK {
			t.Errorf("%s: resultChild = %q, %v; full decode %q, %v", data, gotID, gotOK, wantID, wantOK)
		}
	}
}

// FuzzResultChild: on any valid JSON payload, the narrow decode names the
// child the full decode names (when the full decode succeeds: on ill-typed
// members it drops what the narrow one still reads).
func FuzzResultChild(f *testing.F) {
	for _, s := range resultChildSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if !json.Valid([]byte(data)) {
			return // event payloads are valid JSON
		}
		gotID, gotOK := resultChild(json.RawMessage(data))
		wantID, wantOK := fullResultChild(json.RawMessage(data))
		if _, err := session.DecodeData[session.ToolResultData](session.Event{Data: json.RawMessage(data)}); err != nil {
			return
		}
		if gotID != wantID || gotOK != wantOK {
			t.Errorf("%s: resultChild = %q, %v; full decode %q, %v", data, gotID, gotOK, wantID, wantOK)
		}
	})
}

// fullResultChild is the reading resultChild replaces: the whole payload
// decoded, then delegation.ResultChild and the display's child link.
func fullResultChild(data json.RawMessage) (string, bool) {
	d, err := session.DecodeData[session.ToolResultData](session.Event{Type: session.TypeToolResult, Data: data})
	if err != nil {
		return "", false
	}
	if id, _, ok := delegation.ResultChild(d.Raw); ok {
		return id, true
	}
	if d.Display != nil {
		if link, ok := d.Display.Meta[delegation.MetaKey].(map[string]any); ok {
			id, _ := link["childSessionId"].(string)
			return id, id != ""
		}
	}
	return "", false
}

var resultChildSeeds = func() []string {
	msg := `"message":{"id":"m","role":"user","content":[{"type":"text","text":"started"}]}`
	return []string{
		`{"turn":1,"step":1,` + msg + `,"raw":{"kind":"continuable","subagentId":"c1"}}`,
		`{"turn":1,"step":1,` + msg + `,"raw":{"kind":"foreground","runId":"c2","output":{"big":["x","y"]}}}`,
		`{"turn":1,"raw":{"kind":"foreground","subagentId":"c3"}}`,
		`{"turn":1,"raw":{"kind":"continuable","subagentId":7}}`,
		`{"turn":1,"raw":{"kind":"continuable","subagentId":null},"display":{"meta":{"acp-agent/subagent":{"childSessionId":"c4"}}}}`,
		`{"turn":1,"raw":"started c5","display":{"meta":{"acp-agent/subagent":{"childSessionId":"c5","mode":"one-shot","depth":1}}}}`,
		`{"turn":1,"raw":["subagentId"],"display":{"meta":{"acp-agent/subagent":{"childSessionId":"c6"}}}}`,
		`{"turn":1,"display":{"meta":{"acp-agent/subagent":"c7"}}}`,
		`{"turn":1,"display":{"meta":{"other":{"childSessionId":"c8"}}}}`,
		`{"turn":1,"display":null,"raw":null}`,
		`{"turn":1,"raw":{"kind":"continuable","subagentId":"c9","subagentId":"c10"}}`,
		`{"turn":1,"raw":{"kind":"continuable","subagentId":"c\u0031\u0031"}}`,
		`not json {"subagentId"`,
		`{"RAW":{"kind":"continuable","subagentId":"c12"},"raw":{"kind":"continuable","subagentId":"c13"}}`,
		`{"raw":{"kind":"continuable","subagentId":"c14"},"Raw":{"kind":"other"}}`,
		`{"r\u0061w":{"kind":"continuable","subagentId":"c15"}}`,
		`{"raw":{"kind":"continuable","subagentId":"c16"},"display":7}`,
		`{"turn":1,"message":{"text":"}{[\"subagentId\":\"x\"]"},"raw":{"kind":"continuable","output":"{\"", "subagentId":"c17"}}`,
		` { "raw" : { "kind" : "foreground" , "runId" : "c18" } , "display" : { "meta" : { } } } `,
		`{"Display":{"META":{"acp-agent/subagent":{"childSessionId":"c19"}}}}`,
		`{"raw":[{"kind":"continuable","subagentId":"c20"}],"display":{"meta":{"acp-agent/subagent":{"childSessionId":"c21"}}}}`,
		`{"raw":{"kind":"continuable","subagentId":"c22"}`,
		`[]`,
		`"raw"`,
		`{}`,
	}
}()
