package acpschema

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// The embedded files are the release's, unchanged (README.md's hashes).
func TestFilesAreTheReleasesUnchanged(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"v1/schema.json": stableJSON, "v1/schema.unstable.json": unstableJSON} {
		sum := sha256.Sum256(raw)
		if want := hex.EncodeToString(sum[:]) + "  " + name; !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not list %q: the file changed or the README is stale", want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, def, doc string
		ok             bool
	}{
		{"announcement", "SubagentUpdate", `{"sessionId":"c1","title":"t","capabilities":{"cancel":{}},"state":{"state":"running"}}`, true},
		{"patch clears", "SubagentUpdate", `{"sessionId":"c1","title":null,"state":null}`, true},
		{"no session id", "SubagentUpdate", `{"title":"t"}`, false},
		{"idle end_turn with usage", "StateUpdate", `{"state":"idle","stopReason":"end_turn","usage":{"totalTokens":3,"inputTokens":2,"outputTokens":1}}`, true},
		{"idle error", "StateUpdate", `{"state":"idle","stopReason":"error","error":{"code":-32603,"message":"boom"}}`, true},
		{"idle custom", "StateUpdate", `{"state":"idle","stopReason":"_acp-agent/settled"}`, true},
		{"usage missing totals", "StateUpdate", `{"state":"idle","usage":{"inputTokens":1}}`, false},
		{"unknown", "StateUpdate", `{"state":"unknown"}`, true},
		{"no state", "StateUpdate", `{}`, false},
		{"message", "SessionMessage", `{"messageId":"m1","senderSessionId":"p","recipientSessionId":"c","content":[{"type":"text","text":"hi"}]}`, true},
		{"message bad content", "SessionMessage", `{"messageId":"m1","content":[{"type":"bogus"}]}`, false},
		{"chunk", "SessionMessageChunk", `{"messageId":"m1","content":{"type":"text","text":"hi"}}`, true},
		{"chunk no content", "SessionMessageChunk", `{"messageId":"m1"}`, false},
		{"capabilities", "SubagentSessionCapabilities", `{"cancel":{}}`, true},
		{"update variant", "SessionNotification", `{"sessionId":"p","update":{"sessionUpdate":"subagent_update","sessionId":"c"}}`, true},
		{"unknown variant", "SessionNotification", `{"sessionId":"p","update":{"sessionUpdate":"_nope"}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.def, []byte(tc.doc))
			if (err == nil) != tc.ok {
				t.Fatalf("Validate(%s, %s) = %v, want ok %v", tc.def, tc.doc, err, tc.ok)
			}
		})
	}
}

func TestStableFileHasNoSubagentShapes(t *testing.T) {
	if err := ValidateIn(Stable, "SubagentUpdate", []byte(`{"sessionId":"c"}`)); err == nil {
		t.Fatal("the stable file of 2.4.0 has no SubagentUpdate; expected an error")
	}
	if err := ValidateIn(Stable, "SessionNotification", []byte(`{"sessionId":"p","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`)); err != nil {
		t.Fatal(err)
	}
}

func TestValidateMessage(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"p","update":{"sessionUpdate":"session_message_chunk","messageId":"m","content":{"type":"text","text":"x"}}}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"c","toolCall":{"toolCallId":"t"},"options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"}]}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"c"}}`, false},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"c"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{`{"jsonrpc":"2.0","method":"no/such","params":{}}`, false},
	}
	for _, tc := range tests {
		if err := ValidateMessage([]byte(tc.line)); (err == nil) != tc.ok {
			t.Errorf("ValidateMessage(%s) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
	if err := ValidateResult("session/prompt", []byte(`{"stopReason":"end_turn"}`)); err != nil {
		t.Error(err)
	}
}
