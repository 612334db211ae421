package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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
			// The alias now also brings the ACP v1 frames: the child's
			// prompt as a session_message (+chunk) from its parent, which
			// this SDK client, predating them, decodes by shape as an
			// untitled session_info_update and a user_message_chunk. The
			// replay below shows the prompt as the user's own message,
			// left out of the comparison too.
			var live []string
			for _, l := range transcript(streamed) {
				if l != "session_info_update title=-" && !strings.HasPrefix(l, "user_message_chunk") {
					live = append(live, l)
				}
			}
			// The same updates, in the same order, as a replay of the child.
			e.rec.reset()
			if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(childID), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatalf("load child: %v", err)
			}
			// The replay also shows the prompt (the client's own message,
			// not streamed live) and a read-only notice.
			var shown []acpsdk.SessionNotification
			for _, n := range e.rec.snapshot(childID) {
				if c := n.Update.AgentMessageChunk; c != nil && c.Meta[acp.MetaReadOnly] != nil {
					continue
				}
				if n.Update.UserMessageChunk == nil {
					shown = append(shown, n)
				}
			}
			if replay := transcript(shown); !slices.Equal(live, replay) {
				t.Errorf("streamed:\n%q\nreplay:\n%q", live, replay)
			}
		})
	}
}

const keeperStart = `
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Keeper", "prompt": "Remember 42."}'
    - text: STARTED
    - text: NOTED
%s
  Keeper:
    - text: READY
    - text: "42"
`

// TestColdResumedChildStreamsAndDigests: after a restart, a child resumed
// from disk by send_message streams its updates under its own id to a
// client that asked, and the send_message call shows its digest, closed
// with the outcome.
//
// It waits on events only (the recorder's notifications, the runtime's
// residency), bounded by the test binary's own deadline rather than
// ctxFor's 20 s: three model turns in two processes under -race on a
// loaded machine can take longer, and the parent's notice turn comes
// when the child's settlement reaches it, not within a set time.
func TestColdResumedChildStreamsAndDigests(t *testing.T) {
	ctx := ctxUntilDeadline(t)
	dir := t.TempDir()
	caps := acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Meta: map[string]any{acp.MetaNamespace: map[string]any{acp.CapSubagentUpdates: true}}}}
	e := start(t, dir, loadScript(t, fmt.Sprintf(keeperStart, "")))
	if _, err := e.cs.Initialize(ctx, caps); err != nil {
		t.Fatal(err)
	}
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "start"); err != nil {
		t.Fatal(err)
	}
	childID := findChild(t, e, id)
	// The child settles on its own schedule: its notice reaches the parent
	// in the step that answers STARTED (steered in before the delegation's
	// result), in a step of its own after it, or in a notice turn after
	// the first turn; the last two are answered by NOTED. Await the turn
	// that answers it, whichever it is.
	awaitSettled(ctx, t, e, childID)
	replies := awaitNoticeAnswered(ctx, t, dir, id)
	if replies == 3 {
		if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
			var parent []acpsdk.SessionNotification
			for _, n := range ns {
				if string(n.SessionId) == id {
					parent = append(parent, n)
				}
			}
			return slices.Contains(transcript(parent), "agent_message_chunk NOTED")
		}); err != nil {
			t.Fatalf("the parent's answer to the notice streamed no NOTED: %q", transcript(e.rec.snapshot(id)))
		}
	}
	e.stop()

	ask := fmt.Sprintf(`    - tool_calls:
        - id: call-ask
          name: send_message
          arguments: '{"subagent_id": %q, "message": "Which number?"}'
    - text: ASKED
    - text: ANSWERED`, childID)
	script := fmt.Sprintf(keeperStart, ask)
	if replies == 2 {
		// The scripted model answers by position: the first process used
		// no NOTED reply, so the second must not offer one.
		script = strings.Replace(script, "    - text: NOTED\n", "", 1)
	}
	e2 := start(t, dir, loadScript(t, script))
	if _, err := e2.cs.Initialize(ctx, caps); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	e2.rec.reset()
	if _, err := e2.prompt(ctx, id, "ask it"); err != nil {
		t.Fatal(err)
	}
	want := "turn 2\n> 42\noutcome: completed"
	if err := e2.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		var mine, parent []acpsdk.SessionNotification
		for _, n := range ns {
			switch string(n.SessionId) {
			case childID:
				mine = append(mine, n)
			case id:
				parent = append(parent, n)
			}
		}
		text, status, _ := lastCallText(parent, "call-ask")
		return slices.Contains(transcript(mine), "agent_message_chunk 42") && text == want && status == acpsdk.ToolCallStatusCompleted
	}); err != nil {
		text, status, _ := lastCallText(e2.rec.snapshot(id), "call-ask")
		t.Fatalf("resumed child: streamed %q; send_message call %s %q, want %q", transcript(e2.rec.snapshot(childID)), status, text, want)
	}
	for _, n := range e2.rec.snapshot(childID) {
		link, _ := n.Meta[acp.MetaNamespace+"/subagent"].(map[string]any)
		if link["parentSessionId"] != id || link["toolCallId"] != "call-start" || link["name"] != "Keeper" || link["task"] != "Remember 42." {
			t.Fatalf("resumed child's _meta = %#v", n.Meta)
		}
	}
}

// awaitNoticeAnswered waits until parent session id's log (under data
// dir dir) holds a child's settlement notice and the end of the turn that
// delivered it, and returns how many model replies the parent had by
// then. It reads the log: the only record of where the notice landed.
func awaitNoticeAnswered(ctx context.Context, t *testing.T, dir, id string) (replies int) {
	t.Helper()
	poll(ctx, t, "the parent answers its child's settlement notice", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "sessions", id+".jsonl"))
		if err != nil {
			return false
		}
		turn, noticeTurn := 0, 0
		replies = 0
		for _, line := range strings.Split(string(data), "\n") {
			var ev struct {
				Type string `json:"type"`
				Data struct {
					Turn   int `json:"turn"`
					Source struct {
						Kind string `json:"kind"`
					} `json:"source"`
				} `json:"data"`
			}
			if json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			switch {
			case ev.Type == "turn/start":
				turn = ev.Data.Turn
			case ev.Type == "assistant/message":
				replies++
			case ev.Type == "user/message" && ev.Data.Source.Kind == "subagent-settled":
				noticeTurn = turn
			case ev.Type == "turn/end" && noticeTurn != 0 && ev.Data.Turn == noticeTurn:
				return true
			}
		}
		return false
	})
	if replies != 2 && replies != 3 {
		t.Fatalf("the parent made %d model replies by the end of its notice's turn, want 2 or 3", replies)
	}
	return replies
}

// ctxUntilDeadline ends shortly before the test binary's deadline (go test
// -timeout), so a slow run fails with the test's own message rather than
// the binary's panic; without a deadline it ends with the test.
func ctxUntilDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-10*time.Second))
	}
	t.Cleanup(cancel)
	return ctx
}
