package acp_test

import (
	"fmt"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// TestLoadedSessionKeepsATailAndAnswersFromItsWholeLog: after session/load
// has replayed a log larger than a session keeps in memory, the session
// holds only its last event; the replay showed every answer, and the next
// request is built from the whole conversation, read back from the file.
func TestLoadedSessionKeepsATailAndAnswersFromItsWholeLog(t *testing.T) {
	ctx := ctxFor(t)
	dir, cwd := t.TempDir(), tempCwd(t)
	var script strings.Builder
	script.WriteString("model:\n  main:\n")
	for i := range 4 {
		// 40 KiB answers: a few turns pass the 64 KiB a session keeps.
		fmt.Fprintf(&script, "    - text: \"answer %d %s\"\n", i, strings.Repeat("x", 40<<10))
	}
	first := start(t, dir, loadScript(t, script.String()))
	first.initialize(ctx)
	id := first.newSession(ctx, cwd)
	for i := range 3 {
		if _, err := first.prompt(ctx, id, fmt.Sprintf("question %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	first.stop()

	rl := &reqLog{inner: loadScript(t, script.String())}
	second := start(t, dir, rl)
	second.initialize(ctx)
	if _, err := second.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	replay := strings.Join(transcript(second.rec.snapshot(id)), "\n")
	for i := range 3 {
		if !strings.Contains(replay, fmt.Sprintf("answer %d ", i)) {
			t.Fatalf("replay lacks answer %d", i)
		}
	}
	sess, ok := second.app.Store().Get(id)
	if !ok {
		t.Fatal("loaded session is not live")
	}
	if got, want := sess.Resident(), int64(sess.Len()-1); got != want {
		t.Fatalf("loaded session keeps events from %d, want only the last one (%d)", got, want)
	}
	if _, err := second.prompt(ctx, id, "question 3"); err != nil {
		t.Fatal(err)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(rl.reqs))
	}
	var texts []string
	for _, m := range rl.reqs[0].Messages {
		texts = append(texts, session.JoinText(m.Content, "")[:min(10, len(session.JoinText(m.Content, "")))])
	}
	want := []string{"question 0", "answer 0 x", "question 1", "answer 1 x", "question 2", "answer 2 x", "question 3"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("request after load = %q, want %q", texts, want)
	}
}
