package acp_test

// This file tests the workspace of subagent children over the real ACP
// connection: a child's permission request is shown through the root
// session's client (identified, never auto-approved), also after the
// parent's turn ended, and a delegation's tool filter holds after a cold
// resume.

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/subagent"
)

const childWriteScript = `
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent
          arguments: '{"description": "Writer", "prompt": "Write c.txt."}'
    - text: STARTED
    - text: NOTED
    - text: AGAIN
  Writer:
    - tool_calls:
        - id: call-w
          name: write
          arguments: '{"path": "c.txt", "content": "from the child\n"}'
    - text: WRITTEN
`

func TestChildPermissionRoutedThroughRoot(t *testing.T) {
	for _, answer := range []string{"allow-once", "reject-once"} {
		t.Run(answer, func(t *testing.T) {
			ctx := ctxFor(t)
			c := newWSClient(true, true, answer)
			e := startWS(t, loadScript(t, childWriteScript), c)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %v, %v", r, err)
			}
			// The parent's turn has ended; the background child asked
			// during it, or its question is held for the next prompt.
			promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
			// The child settles; its notice reaches the parent in a turn of
			// its own or, when the child was quicker, inside the first one,
			// so the test waits for the child, not for a parent reply.
			childID := findChild(t, e.env, id)
			awaitSettled(ctx, t, e.env, childID)
			if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
				return slices.ContainsFunc(ns, func(n acpsdk.SessionNotification) bool {
					u := n.Update.ToolCallUpdate
					return u != nil && string(u.ToolCallId) == childID+"/call-w" && u.Status != nil
				})
			}); err != nil {
				t.Fatalf("the child's call was never closed on the root session: %v", err)
			}
			reqs := c.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if string(r.SessionId) != id {
				t.Errorf("request on session %s, want the root %s", r.SessionId, id)
			}
			if r.ToolCall.Title == nil || !strings.HasPrefix(*r.ToolCall.Title, "[Writer] ") {
				t.Errorf("title = %v, want the child's label as prefix", r.ToolCall.Title)
			}
			if string(r.ToolCall.ToolCallId) != childID+"/call-w" {
				t.Errorf("toolCallId = %s", r.ToolCall.ToolCallId)
			}
			meta, _ := json.Marshal(r.ToolCall.Meta["acp-agent/subagent"])
			if want := `{"childSessionId":"` + childID + `","depth":1}`; string(meta) != want {
				t.Errorf("_meta = %s, want %s", meta, want)
			}
			if len(r.ToolCall.Content) == 0 || r.ToolCall.Content[0].Diff == nil {
				t.Errorf("no diff in the child's request: %+v", r.ToolCall.Content)
			}
			// The child's call is shown on the root session first
			// (pending), and closed after the answer.
			var shown []string
			for _, n := range e.rec.snapshot(id) {
				if tc := n.Update.ToolCall; tc != nil && string(tc.ToolCallId) == childID+"/call-w" {
					shown = append(shown, "start "+string(tc.Status)+" "+tc.Title)
				}
				if u := n.Update.ToolCallUpdate; u != nil && string(u.ToolCallId) == childID+"/call-w" && u.Status != nil {
					shown = append(shown, "update "+string(*u.Status))
				}
			}
			wantClose := "update completed"
			if answer != "allow-once" {
				wantClose = "update failed"
			}
			if len(shown) != 2 || !strings.HasPrefix(shown[0], "start pending [Writer] ") || shown[1] != wantClose {
				t.Errorf("child call on the root session = %q", shown)
			}
			got, err := os.ReadFile(filepath.Join(cwd, "c.txt"))
			if answer == "allow-once" && (err != nil || string(got) != "from the child\n") {
				t.Errorf("c.txt = %q, %v", got, err)
			}
			if answer == "reject-once" && err == nil {
				t.Errorf("c.txt written after a rejection")
			}
			// The child's write went through the client's fs.
			c.mu.Lock()
			writes := c.writes
			c.mu.Unlock()
			if answer == "allow-once" && writes != 1 {
				t.Errorf("client writes = %d", writes)
			}
		})
	}
}

// awaitSettled waits until the child is no longer resident: its turn
// ended and the runtime released it.
func awaitSettled(ctx context.Context, t *testing.T, e *env, childID string) {
	t.Helper()
	poll(ctx, t, "child "+childID+" settles", func() bool { return !e.app.Subagents.Resident(childID) })
}

// poll waits until cond holds, checking every few milliseconds: the
// conditions here are runtime state, not client notifications.
func poll(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting: %s", what)
		case <-tick.C:
		}
	}
}

// findChild returns the single child of parent from the catalog.
func findChild(t *testing.T, e *env, parent string) string {
	t.Helper()
	entries, err := e.app.Catalog.ListChildren(context.Background(), parent)
	if err != nil || len(entries) != 1 {
		t.Fatalf("children of %s = %v, %v", parent, entries, err)
	}
	return entries[0].ID
}

// toolsSeen records the tool names of every model request, by script key.
type toolsSeen struct {
	model.Model
	mu   sync.Mutex
	seen map[string][][]string
}

func (m *toolsSeen) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	m.mu.Lock()
	m.seen[req.Caller.ScriptKey] = append(m.seen[req.Caller.ScriptKey], names)
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

const filterScript = `
model:
  main:
    - tool_calls:
        - id: call-start
          name: subagent_ro
          arguments: '{"description": "Reader", "prompt": "Look around."}'
    - text: STARTED
    - text: NOTED
    - text: RENOTED
  Reader:
    - text: LOOKED
    - tool_calls:
        - id: call-w
          name: write
          arguments: '{"path": "nope.txt", "content": "x"}'
    - text: TRIED
`

func TestToolFilterHoldsAfterColdResume(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(false, false, "allow-once")
	seen := &toolsSeen{seen: map[string][][]string{}}
	e := startWS(t, loadScript(t, filterScript), c, func(cfg *app.Config, _ workspace.Resolver) {
		cfg.Testing.WrapModel = func(m model.Model) model.Model { seen.Model = m; return seen }
		cfg.Wire = func(a *app.App) error {
			return a.Tools.Add(subagent.NewDelegation(a.Subagents, subagent.DelegationConfig{
				Provider: "spawn", Name: "subagent_ro", Background: true,
				ToolFilter: &subagent.ToolFilter{Deny: []string{"write", "edit"}},
			}))
		}
	})
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	// Wait for the child to settle (its notice may arrive inside the
	// parent's first turn or in a turn of its own).
	childID := findChild(t, e.env, id)
	awaitSettled(ctx, t, e.env, childID)
	parent, ok := e.app.Agents.Get(id)
	if !ok {
		t.Fatal("root agent not registered")
	}
	// Settled (released before the notice is sent): not resident, so the
	// follow-up resumes it from disk.
	if e.app.Subagents.Resident(childID) {
		t.Fatal("the settled child is still resident")
	}
	if _, err := e.app.Subagents.Followup(ctx, parent, childID, []session.Block{session.Text("Try to write.")}); err != nil {
		t.Fatalf("follow-up: %v", err)
	}
	poll(ctx, t, "the resumed child settles after its model calls", func() bool {
		seen.mu.Lock()
		calls := len(seen.seen["Reader"])
		seen.mu.Unlock()
		return calls >= 3 && !e.app.Subagents.Resident(childID)
	})
	seen.mu.Lock()
	reqs := seen.seen["Reader"]
	seen.mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("child model calls = %d, want 3", len(reqs))
	}
	for i, names := range reqs {
		if slices.Contains(names, "write") || slices.Contains(names, "edit") || !slices.Contains(names, "read") {
			t.Errorf("child call %d tools = %v (write and edit denied, read allowed)", i, names)
		}
	}
	if len(c.requests()) != 0 {
		t.Errorf("a denied tool asked for permission")
	}
	if _, err := os.Stat(filepath.Join(cwd, "nope.txt")); err == nil {
		t.Errorf("a denied tool wrote")
	}
}
