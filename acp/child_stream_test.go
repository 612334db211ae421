package acp_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
)

const childStreamScript = `
model:
  main:
    - tool_calls:
        - id: call-fg
          name: subagent
          arguments: '{"description": "Fore", "prompt": "Look.", "run_in_background": false}'
    - text: PARENT_DONE
  Fore:
    - tool_calls:
        - id: f-1
          name: read
          arguments: '{"path": "fore.txt"}'
    - text: FORE_DONE
`

// TestChildStreamOnlyForClientsThatAsk: a client announcing
// subagentUpdates receives the child's own updates under its session id,
// in the order a replay of the child shows them, each with the link to
// its parent and delegation; one that does not announce it receives
// nothing under the child's id.
func TestChildStreamOnlyForClientsThatAsk(t *testing.T) {
	for _, ask := range []bool{true, false} {
		t.Run(map[bool]string{true: "announced", false: "not announced"}[ask], func(t *testing.T) {
			ctx := ctxFor(t)
			e := start(t, t.TempDir(), loadScript(t, childStreamScript))
			req := acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}
			if ask {
				req.ClientCapabilities.Meta = map[string]any{acp.MetaNamespace: map[string]any{acp.CapSubagentUpdates: true}}
			}
			if _, err := e.cs.Initialize(ctx, req); err != nil {
				t.Fatal(err)
			}
			cwd := tempCwd(t)
			if err := os.WriteFile(filepath.Join(cwd, "fore.txt"), []byte("text\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			childID := findChild(t, e, id)
			// Let the child's emitter drain: a barrier on the parent is not
			// one on the child, so wait for its last update.
			streamed := e.rec.snapshot(childID)
			if !ask {
				if len(streamed) != 0 {
					t.Fatalf("%d updates under the child's id without the announcement: %v", len(streamed), transcript(streamed))
				}
				return
			}
			if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
				var mine []acpsdk.SessionNotification
				for _, n := range ns {
					if string(n.SessionId) == childID {
						mine = append(mine, n)
					}
				}
				return slices.Contains(transcript(mine), "agent_message_chunk FORE_DONE")
			}); err != nil {
				t.Fatalf("child stream never showed its answer: %q", transcript(e.rec.snapshot(childID)))
			}
			streamed = e.rec.snapshot(childID)
			wantLink := map[string]any{"parentSessionId": id, "toolCallId": "call-fg", "name": "Fore", "task": "Look.",
				"capabilities": map[string]any{"cancel": true, "close": false}}
			for i, n := range streamed {
				if got := n.Meta[acp.MetaNamespace+"/subagent"]; !reflect.DeepEqual(got, wantLink) {
					t.Fatalf("update %d _meta = %#v, want %#v", i, got, wantLink)
				}
			}
			live := transcript(streamed)
			// The same updates, in the same order, as a replay of the child.
			e.rec.reset()
			if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(childID), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatalf("load child: %v", err)
			}
			// The replay also shows the prompt (the client's own message,
			// not streamed live) and a read-only notice.
			var shown []acpsdk.SessionNotification
			for _, n := range e.rec.snapshot(childID) {
				if _, notice := n.Meta[acp.MetaNamespace+"/readOnly"]; !notice && n.Update.UserMessageChunk == nil {
					shown = append(shown, n)
				}
			}
			if replay := transcript(shown); !slices.Equal(live, replay) {
				t.Errorf("streamed:\n%q\nreplay:\n%q", live, replay)
			}
		})
	}
}
