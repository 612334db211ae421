package acp_test

// This file tests the live digest a delegation's tool call shows of its
// child over the real connection: a foreground child's calls while the
// parent waits, a background child's after the parent's turn ended, and
// the same final digests in the replay of session/load.

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// keyGate holds the model request of one child (by script key) at one
// call until release is closed, after signalling entered.
type keyGate struct {
	model.Model
	key     string
	call    int
	entered chan struct{}
	release chan struct{}
}

func (m *keyGate) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if req.Caller.ScriptKey == m.key && req.Caller.Call == m.call {
		m.entered <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
		}
	}
	return m.Model.Stream(ctx, req)
}

const digestScript = `
model:
  main:
    - tool_calls:
        - id: call-fg
          name: subagent
          arguments: '{"description": "Fore", "prompt": "Look.", "run_in_background": false}'
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: PARENT_DONE
    - text: NOTED
  Fore:
    - tool_calls:
        - id: f-1
          name: read
          arguments: '{"path": "fore.txt"}'
    - text: "looked around\nFORE_DONE"
  Back:
    - tool_calls:
        - id: b-1
          name: read
          arguments: '{"path": "back.txt"}'
        - id: b-2
          name: read
          arguments: '{"path": "missing.txt"}'
    - text: BACK_DONE
`

// lastCallText is the text content of the last update of call id.
func lastCallText(ns []acpsdk.SessionNotification, id string) (text string, status acpsdk.ToolCallStatus, n int) {
	for _, nt := range ns {
		u := nt.Update.ToolCallUpdate
		if u == nil || string(u.ToolCallId) != id {
			continue
		}
		n++
		if u.Status != nil {
			status = *u.Status
		}
		if len(u.Content) > 0 && u.Content[0].Content != nil && u.Content[0].Content.Content.Text != nil {
			text = u.Content[0].Content.Content.Text.Text
		}
	}
	return text, status, n
}

func TestLiveDigestOfDelegations(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	ticks := make(chan time.Time)
	// The background child's second model call waits for the test.
	gate := &keyGate{Model: loadScript(t, digestScript), key: "Back", call: 1, entered: make(chan struct{}, 1), release: make(chan struct{})}
	withTicks := func(c *app.Config) {
		c.Testing = &testhooks.Hooks{Model: c.Testing.Model, NoSync: true, PanicOnBug: true,
			DigestTicks: func() (<-chan time.Time, func()) { return ticks, func() {} }}
	}
	e := startCfg(t, dir, gate, withTicks)
	e.initialize(ctx)
	cwd := tempCwd(t)
	for _, f := range []string{"fore.txt", "back.txt"} {
		if err := os.WriteFile(filepath.Join(cwd, f), []byte("text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, "delegate twice"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}

	// The foreground child: its first state went at once (the link to it),
	// and its result carries the final digest before the answer.
	live := e.rec.snapshot(id)
	fg, status, n := lastCallText(live, "call-fg")
	wantFg := "turn 1\nread · read fore.txt · completed\n> FORE_DONE\noutcome: completed"
	if fg != wantFg || status != acpsdk.ToolCallStatusCompleted || n < 2 {
		t.Errorf("foreground call: %d updates, last %s %q, want %q", n, status, fg, wantFg)
	}

	// The background child outlives the parent's turn: each tick sends
	// its current state on the delegation call.
	select {
	case <-gate.entered:
	case <-ctx.Done():
		t.Fatal("the background child never made its second model call")
	}
	select {
	case ticks <- time.Time{}:
	case <-ctx.Done():
		t.Fatal("no digest ticker for the background child")
	}
	running := "turn 1\nread · read back.txt · completed\nread · read missing.txt · failed"
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		text, status, _ := lastCallText(ns, "call-bg")
		return text == running && status == acpsdk.ToolCallStatusInProgress
	}); err != nil {
		text, status, _ := lastCallText(e.rec.snapshot(id), "call-bg")
		t.Fatalf("background digest after end_turn: %s %q, want %q (%v)", status, text, running, err)
	}

	// Released, it settles: the call closes with the outcome (sent at once,
	// and again with the settlement notice the parent then reads).
	close(gate.release)
	wantBg := "turn 1\nread · read back.txt · completed\nread · read missing.txt · failed\n> BACK_DONE\noutcome: completed"
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		text, status, _ := lastCallText(ns, "call-bg")
		return text == wantBg && status == acpsdk.ToolCallStatusCompleted
	}); err != nil {
		text, status, _ := lastCallText(e.rec.snapshot(id), "call-bg")
		t.Fatalf("settled background digest: %s %q, want %q", status, text, wantBg)
	}
	poll(ctx, t, "the parent reads the notice", func() bool {
		for _, l := range transcript(e.rec.snapshot(id)) {
			if strings.Contains(l, "NOTED") {
				return true
			}
		}
		return false
	})
	e.stop()

	// A new process replays the same final digests.
	e2 := startCfg(t, dir, loadScript(t, digestScript), withTicks)
	e2.initialize(ctx)
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("load: %v", err)
	}
	replay := e2.rec.snapshot(id)
	for _, c := range []struct{ call, want string }{{"call-fg", wantFg}, {"call-bg", wantBg}} {
		if text, status, _ := lastCallText(replay, c.call); text != c.want || status != acpsdk.ToolCallStatusCompleted {
			t.Errorf("replay of %s: %s %q, want %q", c.call, status, text, c.want)
		}
	}
}

// argsModel replaces CHILD in the arguments of every tool call with the
// id set once the child exists (a script cannot know it).
type argsModel struct {
	model.Model
	mu sync.Mutex
	id string
}

func (m *argsModel) set(id string) { m.mu.Lock(); m.id = id; m.mu.Unlock() }

func (m *argsModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	m.mu.Lock()
	id := m.id
	m.mu.Unlock()
	return func(yield func(session.Chunk, error) bool) {
		for c, err := range m.Model.Stream(ctx, req) {
			if id != "" {
				c.Arguments = strings.ReplaceAll(c.Arguments, "CHILD", id)
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

const rewatchScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: STARTED
    - tool_calls:
        - id: call-msg
          name: send_message
          arguments: '{"subagent_id": "CHILD", "message": "More."}'
    - text: SENT
    - text: NOTED
  Back:
    - tool_calls:
        - id: b-1
          name: read
          arguments: '{"path": "back.txt"}'
    - text: FIRST_DONE
    - tool_calls:
        - id: b-2
          name: read
          arguments: '{"path": "more.txt"}'
    - text: SECOND_DONE
`

// A send_message to a child still resident (it is working on its first
// message) gets a digest of its own: from that message on, the child's
// work shows on the send_message call, whose final digest the settlement
// notice carries (so a replay shows it there too); the start's call keeps
// what it showed, closed with a line saying where the work goes on.
func TestResidentChildMessagedAgainGetsAFreshDigest(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	ticks := make(chan time.Time)
	ids := &argsModel{Model: loadScript(t, rewatchScript)}
	// The child's second model call (its first message's answer) waits,
	// so it is resident and working when the second message comes.
	gate := &keyGate{Model: ids, key: "Back", call: 1, entered: make(chan struct{}, 1), release: make(chan struct{})}
	withTicks := func(c *app.Config) {
		c.Testing = &testhooks.Hooks{Model: c.Testing.Model, NoSync: true, PanicOnBug: true,
			DigestTicks: func() (<-chan time.Time, func()) { return ticks, func() {} }}
	}
	e := startCfg(t, dir, gate, withTicks)
	e.initialize(ctx)
	cwd := tempCwd(t)
	for _, f := range []string{"back.txt", "more.txt"} {
		if err := os.WriteFile(filepath.Join(cwd, f), []byte("text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}
	select {
	case <-gate.entered:
	case <-ctx.Done():
		t.Fatal("the child never made its second model call")
	}
	child := findChild(t, e, id)
	ids.set(child)
	if r, err := e.prompt(ctx, id, "tell it more"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("second prompt: %+v, %v", r, err)
	}
	wantStart := "turn 1\nread · read back.txt · completed\ncontinued: a later message to this subagent shows its work from there"
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		text, status, _ := lastCallText(ns, "call-bg")
		return text == wantStart && status == acpsdk.ToolCallStatusCompleted
	}); err != nil {
		text, status, _ := lastCallText(e.rec.snapshot(id), "call-bg")
		t.Fatalf("the start's digest after the second message: %s %q, want %q", status, text, wantStart)
	}
	close(gate.release)
	wantMsg := "turn 2\nread · read more.txt · completed\n> SECOND_DONE\noutcome: completed"
	if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
		text, status, _ := lastCallText(ns, "call-msg")
		return text == wantMsg && status == acpsdk.ToolCallStatusCompleted
	}); err != nil {
		text, status, _ := lastCallText(e.rec.snapshot(id), "call-msg")
		t.Fatalf("the message's digest: %s %q, want %q", status, text, wantMsg)
	}
	if text, _, _ := lastCallText(e.rec.snapshot(id), "call-bg"); text != wantStart {
		t.Errorf("the start's call changed after the handover: %q", text)
	}
	poll(ctx, t, "the parent reads the notice", func() bool {
		for _, l := range transcript(e.rec.snapshot(id)) {
			if strings.Contains(l, "NOTED") {
				return true
			}
		}
		return false
	})
	e.stop()

	// The replay shows the final digest on the message's call.
	e2 := startCfg(t, dir, loadScript(t, rewatchScript), withTicks)
	e2.initialize(ctx)
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("load: %v", err)
	}
	if text, status, _ := lastCallText(e2.rec.snapshot(id), "call-msg"); text != wantMsg || status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("replay of call-msg: %s %q, want %q", status, text, wantMsg)
	}
}
