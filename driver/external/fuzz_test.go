package external

import (
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// FuzzNestedLine feeds lines of an agent's stdout to the subagent_update
// sniffer: whatever the line, it never panics, and what it records reads
// back (NestedChildren) with an id.
func FuzzNestedLine(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"subagent_update","sessionId":"c1","title":"T","state":{"state":"idle","stopReason":"end_turn"}}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"subagent_update"}}}`))
	f.Add([]byte(`{"method":"session/update","params":{"update":{"sessionUpdate":"subagent_update","sessionId":1}}}`))
	f.Add([]byte(`"subagent_update"`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := session.NewStore(&session.DeterministicSources{}).Create(session.Header{ID: "c"}, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := New(s, Command{Name: "f", Command: "x"}, Options{})
		taken := c.nestedLine(line)
		events, err := s.Events()
		if err != nil {
			t.Fatal(err)
		}
		recorded := 0
		for _, ev := range events {
			if ev.Type == TypeNestedChild {
				recorded++
			}
		}
		if recorded > 0 && !taken {
			t.Fatalf("recorded a line it did not take: %q", line)
		}
		for _, n := range NestedChildren(events) {
			if n.SessionID == "" {
				t.Fatalf("a nested child without an id from %q", line)
			}
		}
		if taken && !json.Valid(line) {
			t.Fatalf("took a line that is not JSON: %q", line)
		}
	})
}

// FuzzLastRecord reads hostile subagent/external payloads: an error or a
// record with a session id, never a panic.
func FuzzLastRecord(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s","command":"c","loadSession":true}`))
	f.Add([]byte(`{"sessionId":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := LastRecord([]session.Event{{Type: TypeExternal, Data: data}})
		if err == nil && (rec == nil || rec.SessionID == "") {
			t.Fatalf("record %+v without an error from %q", rec, data)
		}
	})
}
