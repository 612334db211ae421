package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// An unknown session id answers ACP's -32002 (resource not found) on every
// method that names a session, with the stable code UNKNOWN_SESSION in the
// data: acpx starts a fresh session only on -32002, so after a lost data
// directory a -32602 would fail every later prompt. A malformed id stays
// -32602 (invalid params).
func TestUnknownSessionIsResourceNotFound(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd, id := firstSession(t, ctx)
	c := startRPC(t, dir, oneReply)
	c.initialize(ctx)
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"session/load", map[string]any{"sessionId": "no-such-session", "cwd": cwd, "mcpServers": []any{}}},
		{"session/resume", map[string]any{"sessionId": "no-such-session", "cwd": cwd}},
		{"session/fork", map[string]any{"sessionId": "no-such-session", "cwd": cwd}},
		{"session/close", map[string]any{"sessionId": "no-such-session"}},
		// Stored but not loaded in this connection: close and prompt
		// know only bound sessions.
		{"session/close", map[string]any{"sessionId": id}},
		{"session/prompt", map[string]any{"sessionId": "no-such-session", "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}},
	} {
		var res map[string]any
		err := c.call(ctx, tc.method, tc.params, &res)
		je, ok := err.(*jsonrpc2.Error)
		if !ok || je.Code != -32002 || !strings.Contains(je.Message, "unknown session") {
			t.Errorf("%s %v = %v, want -32002 unknown session", tc.method, tc.params["sessionId"], err)
			continue
		}
		var data struct{ Code string }
		if je.Data == nil || json.Unmarshal(*je.Data, &data) != nil || data.Code != "UNKNOWN_SESSION" {
			t.Errorf("%s data = %s, want code UNKNOWN_SESSION", tc.method, derefRaw(je.Data))
		}
	}
	var res map[string]any
	err := c.call(ctx, "session/load", map[string]any{"sessionId": "../x", "cwd": cwd, "mcpServers": []any{}}, &res)
	if rpcCode(err) != -32602 {
		t.Errorf("load of a malformed id = %v, want -32602", err)
	}
}

func derefRaw(m *json.RawMessage) string {
	if m == nil {
		return "<nil>"
	}
	return string(*m)
}
