package acp_test

// This file tests the durability of a child's permission request in its
// root session's log: a session/load after a restart shows the request's
// tool call as the live stream did, the records never reach the model's
// history, and a request left without outcome (the process died while
// asking) is closed as failed when the root is bound again.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
)

// foldCall folds the tool_call and tool_call_update notifications of call
// id, as a client does (present fields replace, _meta merges), into one
// comparable JSON object; it also returns the statuses in order.
func foldCall(t *testing.T, ns []acpsdk.SessionNotification, id string) (string, []string) {
	t.Helper()
	state := map[string]any{}
	var statuses []string
	for _, n := range ns {
		if n.Update.ToolCall == nil && n.Update.ToolCallUpdate == nil {
			continue
		}
		raw, err := json.Marshal(n.Update)
		if err != nil {
			t.Fatal(err)
		}
		var u map[string]any
		if err := json.Unmarshal(raw, &u); err != nil {
			t.Fatal(err)
		}
		if u["toolCallId"] != id {
			continue
		}
		for k, v := range u {
			switch k {
			case "sessionUpdate":
			case "_meta":
				m, _ := state[k].(map[string]any)
				if m == nil {
					m = map[string]any{}
				}
				vm, _ := v.(map[string]any)
				maps.Copy(m, vm)
				state[k] = m
			default:
				state[k] = v
			}
		}
		if s, ok := u["status"].(string); ok {
			statuses = append(statuses, s)
		}
	}
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), statuses
}

func permissionRecords(events []session.Event) []acp.ChildPermissionData {
	var out []acp.ChildPermissionData
	for _, ev := range events {
		if ev.Type != acp.TypeChildPermission {
			continue
		}
		d, err := session.DecodeData[acp.ChildPermissionData](ev)
		if err != nil || !ev.Ignorable || ev.SurfaceOp != nil {
			panic("malformed subagent/permission record")
		}
		out = append(out, d)
	}
	return out
}

func loadWS(t *testing.T, e *wsEnv, id, cwd string) {
	t.Helper()
	if _, err := e.cs.LoadSession(ctxFor(t), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
}

func inDir(dir string) func(*app.Config, workspace.Resolver) {
	return func(cfg *app.Config, _ workspace.Resolver) { cfg.DataDir = dir }
}

// TestChildPermissionReplaysAfterRestart: the background child asks (most
// often after the root's turn ended); the question and the answer are
// recorded in the root's log (invisible to the model), and a session/load
// in a new process replays the tool call exactly as it was shown live.
func TestChildPermissionReplaysAfterRestart(t *testing.T) {
	for _, tc := range []struct{ answer, final, outcome string }{
		{"allow-once", "completed", acp.ChildPermissionAllowed},
		{"reject-once", "failed", acp.ChildPermissionRefused},
		{"cancel", "failed", acp.ChildPermissionRefused},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			ctx := ctxFor(t)
			dir := t.TempDir()
			c := newWSClient(true, true, tc.answer)
			e := startWS(t, loadScript(t, childWriteScript), c, inDir(dir))
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			// Wait for the update closing the child's call on the root (not
			// for the parent's reaction: the child's settlement may be
			// spliced into the parent's first turn or start a second one).
			promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
			childID := findChild(t, e.env, id)
			callID := childID + "/call-w"
			if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
				return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool {
					u := n.Update.ToolCallUpdate
					return u != nil && string(u.ToolCallId) == callID && u.Status != nil
				})
			}); err != nil {
				t.Fatalf("the child's call was never closed on the root: %v", err)
			}
			live, liveStatuses := foldCall(t, e.rec.snapshot(id), callID)
			if !slices.Equal(liveStatuses, []string{"pending", tc.final}) {
				t.Fatalf("live statuses = %v, want [pending %s]", liveStatuses, tc.final)
			}

			root, ok := e.app.Sessions.Get(id)
			if !ok {
				t.Fatal("root session not live")
			}
			events := root.MustEvents()
			recs := permissionRecords(events)
			if len(recs) != 2 || recs[0].Status != acp.ChildPermissionAsked || recs[1].Status != tc.outcome ||
				recs[0].ToolCallID != callID || recs[1].ToolCallID != callID || recs[0].ChildSessionID != childID ||
				recs[0].Depth != 1 || recs[0].Title == "" || recs[0].Kind != "edit" || recs[0].Display == nil {
				t.Fatalf("records = %+v", recs)
			}
			if err := session.ValidateLog(events); err != nil {
				t.Fatalf("root log invalid: %v", err)
			}
			// The records are not part of the model's conversation and open
			// or close no turn.
			without := slices.DeleteFunc(slices.Clone(events), func(ev session.Event) bool { return ev.Type == acp.TypeChildPermission })
			if session.OpenTurn(events) != session.OpenTurn(without) {
				t.Error("the records change whether the log ends inside a turn")
			}
			h1, err := session.History(events)
			if err != nil {
				t.Fatal(err)
			}
			h2, _ := session.History(without)
			a, _ := json.Marshal(stripSeqs(h1))
			b, _ := json.Marshal(stripSeqs(h2))
			if string(a) != string(b) {
				t.Errorf("history changed by the records:\n%s\n%s", a, b)
			}
			e.stop()

			c2 := newWSClient(true, true)
			e2 := startWS(t, loadScript(t, childWriteScript), c2, inDir(dir))
			loadWS(t, e2, id, cwd)
			replayed, replayStatuses := foldCall(t, e2.rec.snapshot(id), callID)
			if replayed != live {
				t.Errorf("replay differs:\nlive   %s\nreplay %s", live, replayed)
			}
			if !slices.Equal(replayStatuses, liveStatuses) {
				t.Errorf("replayed statuses = %v, live %v", replayStatuses, liveStatuses)
			}
			if n := len(c2.requests()); n != 0 {
				t.Errorf("the replay asked %d times", n)
			}
			// A settled request is not settled again.
			root2, _ := e2.app.Sessions.Get(id)
			if recs := permissionRecords(root2.MustEvents()); len(recs) != 2 {
				t.Errorf("records after load = %d, want 2", len(recs))
			}
		})
	}
}

func stripSeqs(h []session.SurfaceMessage) []session.Message {
	out := make([]session.Message, len(h))
	for i, m := range h {
		out[i] = m.Message
	}
	return out
}

// TestDanglingChildPermissionClosedOnLoad: a request recorded without an
// outcome (the process died while asking) is closed as failed, durably,
// when the root session is loaded again; the next load replays both.
func TestDanglingChildPermissionClosedOnLoad(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	cwd := tempCwd(t)
	e := start(t, dir, loadScript(t, echoScript))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	root, ok := e.app.Sessions.Get(id)
	if !ok {
		t.Fatal("root not live")
	}
	asked := acp.ChildPermissionData{
		ToolCallID: "child-1/call-w", ChildSessionID: "child-1", Depth: 1,
		Status: acp.ChildPermissionAsked, Title: "[Writer] Create c.txt", Kind: "edit",
		Display: &session.ToolDisplay{Locations: []session.ToolLocation{{Path: cwd + "/c.txt"}}},
	}
	if _, err := root.Append(acp.TypeChildPermission, asked, session.Ignorable()); err != nil {
		t.Fatal(err)
	}
	e.stop()

	for round, want := range [][]string{{"pending", "failed"}, {"pending", "failed"}} {
		e2 := start(t, dir, loadScript(t, echoScript))
		e2.initialize(ctx)
		if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
			t.Fatal(err)
		}
		_, statuses := foldCall(t, e2.rec.snapshot(id), asked.ToolCallID)
		if !slices.Equal(statuses, want) {
			t.Errorf("round %d: statuses = %v, want %v", round, statuses, want)
		}
		s, _ := e2.app.Sessions.Get(id)
		recs := permissionRecords(s.MustEvents())
		if len(recs) != 2 || recs[1].Status != acp.ChildPermissionRefused || recs[1].ToolCallID != asked.ToolCallID {
			t.Errorf("round %d: records = %+v", round, recs)
		}
		e2.stop()
	}
}

// TestChildPermissionDurableBeforeShown: when the client receives the
// pending tool_call of a child's request, and when it receives the update
// closing it, the root's session file already holds the record it renders.
func TestChildPermissionDurableBeforeShown(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(true, true, "allow-once")
	e := startWS(t, loadScript(t, childWriteScript), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	var (
		mu   sync.Mutex
		seen []string
		// closed is closed by the hook once it recorded the update that
		// closes the call. The recorder signals await before it runs the
		// hook, so awaiting the recorded updates alone raced the hook.
		closed    = make(chan struct{})
		closeOnce sync.Once
	)
	c.recorder.mu.Lock()
	c.recorder.onUpdate = func(n acpsdk.SessionNotification) {
		var call, status string
		switch u := n.Update; {
		case u.ToolCall != nil:
			call, status = string(u.ToolCall.ToolCallId), string(u.ToolCall.Status)
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
			call, status = string(u.ToolCallUpdate.ToolCallId), string(*u.ToolCallUpdate.Status)
		}
		if !strings.HasSuffix(call, "/call-w") {
			return
		}
		raw, err := os.ReadFile(filepath.Join(e.app.Persist.Dir(), id+".jsonl"))
		var stored []string
		for line := range strings.SplitSeq(string(raw), "\n") {
			var ev session.Event
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Type != acp.TypeChildPermission {
				continue
			}
			d, _ := session.DecodeData[acp.ChildPermissionData](ev)
			stored = append(stored, d.Status)
		}
		// The client may handle the notification late, so later records
		// may be stored too; the one it renders must be.
		need := map[string]string{"pending": acp.ChildPermissionAsked, "completed": acp.ChildPermissionAllowed}[status]
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s: stored %v %v", status, slices.Contains(stored, need), err))
		mu.Unlock()
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil {
			closeOnce.Do(func() { close(closed) })
		}
	}
	c.recorder.mu.Unlock()
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the child's permission call was never closed")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"pending: stored true <nil>", "completed: stored true <nil>"}
	if !slices.Equal(seen, want) {
		t.Errorf("shown vs stored:\n got %q\nwant %q", seen, want)
	}
}

// promptIfHeld prompts root id once more ("go on") if a question of a
// background child is held for its next prompt, and returns once the
// question was asked (asked reports it): a client without the subagents
// capability is asked a question a background child asks between prompts
// only at the next prompt. The child may also ask during the first
// prompt, and is then asked at once.
func promptIfHeld(ctx context.Context, t *testing.T, e *env, id string, asked func() bool) {
	t.Helper()
	for !asked() {
		if e.app.Server.Questions().Held(id) > 0 {
			if _, err := e.prompt(ctx, id, "go on"); err != nil {
				t.Fatalf("the prompt releasing the held question: %v", err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			t.Fatal("the child's question was neither asked nor held")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
