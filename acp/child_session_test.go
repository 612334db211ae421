package acp_test

// This file tests a child (subagent) session opened by its own id over the
// real connection: session/load replays it read-only and says so, a
// prompt to it is refused with READ_ONLY_SESSION, session/cancel of its id
// interrupts its turn as interrupt_agent does, and session/list lists a
// parent's children through the _meta filter.

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// rpcDataCode is the domain code in a JSON-RPC error's data ("" if none).
func rpcDataCode(err error) string {
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		return ""
	}
	data, _ := re.Data.(map[string]any)
	code, _ := data["code"].(string)
	return code
}

// readOnlyNotice returns the parentSessionId of the read-only notice
// among ns and how many notices there are.
func readOnlyNotice(ns []acpsdk.SessionNotification) (parent string, n int, last bool) {
	for i, nt := range ns {
		c := nt.Update.AgentMessageChunk
		if c == nil || c.Meta == nil {
			continue
		}
		m, ok := c.Meta[acp.MetaReadOnly].(map[string]any)
		if !ok {
			continue
		}
		n++
		parent, _ = m["parentSessionId"].(string)
		last = i == len(ns)-1
	}
	return parent, n, last
}

func TestLoadChildShowsReadOnlyNoticeAndRefusesPrompts(t *testing.T) {
	for _, c := range []struct {
		name    string
		restart bool // load from storage in a new process, not from the live store
	}{
		{"live child", false},
		{"stored child after a restart", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxFor(t)
			dir := t.TempDir()
			e := start(t, dir, loadScript(t, echoScript))
			e.initialize(ctx)
			cwd := tempCwd(t)
			parent := e.newSession(ctx, cwd)
			child, err := e.app.Sessions.Create(session.Header{Cwd: cwd, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			msg := session.Message{ID: "m1", Role: session.RoleUser, Content: []session.Block{session.Text("child task")}, Source: session.Source{Kind: session.SourceUser}}
			if _, err := child.Append(session.TypeUserMessage, msg); err != nil {
				t.Fatal(err)
			}
			if c.restart {
				e.stop()
				e = start(t, dir, loadScript(t, echoScript))
				e.initialize(ctx)
			}
			// Loaded twice (an editor reopening it): each replay ends with
			// the notice.
			for load := 1; load <= 2; load++ {
				e.rec.reset()
				if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(child.ID()), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
					t.Fatalf("load %d: %v", load, err)
				}
				ns := e.rec.snapshot(child.ID())
				if got := transcript(ns); len(got) != 2 || got[0] != "user_message_chunk child task" ||
					!strings.Contains(got[1], "shown read-only: its parent session "+parent+" owns it") {
					t.Errorf("load %d: replay = %q, want the task then the read-only notice", load, got)
				}
				if p, n, last := readOnlyNotice(ns); p != parent || n != 1 || !last {
					t.Errorf("load %d: notice parent %q, %d notices, last %v; want %q, 1, true", load, p, n, last, parent)
				}
				// Its own message: a messageId of its own, no blank lines
				// glued to the answer before it.
				if c := ns[len(ns)-1].Update.AgentMessageChunk; c == nil || c.MessageId == nil || *c.MessageId == "" ||
					c.Content.Text == nil || strings.HasPrefix(c.Content.Text.Text, "\n") {
					t.Errorf("load %d: notice is not a message of its own: %+v", load, c)
				}
			}
			_, err = e.prompt(ctx, child.ID(), "hi")
			wantRPCError(t, err, -32602, "subagent session of "+parent+", read-only while its parent owns it")
			if code := rpcDataCode(err); code != string(acp.CodeReadOnlySession) {
				t.Errorf("prompt error code = %q, want %s", code, acp.CodeReadOnlySession)
			}
			// The parent itself is an ordinary session: no notice there.
			if _, n, _ := readOnlyNotice(e.rec.snapshot(parent)); n != 0 {
				t.Errorf("the parent got %d read-only notices", n)
			}
		})
	}
}

// holdModel holds the model calls of one child (by script key) until
// their context ends, then fails them with its cause, after signalling
// entered; every other call goes to Model.
type holdModel struct {
	model.Model
	key     string
	entered chan struct{}
}

func (m *holdModel) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	if req.Caller.ScriptKey != m.key {
		return m.Model.Stream(ctx, req)
	}
	return func(yield func(session.Chunk, error) bool) {
		select {
		case m.entered <- struct{}{}:
		case <-ctx.Done():
		}
		<-ctx.Done()
		yield(session.Chunk{}, context.Cause(ctx))
	}
}

const cancelChildScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: PARENT_DONE
    - text: NOTED
  Back:
    - text: NEVER_SENT
`

// childIDOf is the childSessionId a delegation call's updates link to.
func childIDOf(ns []acpsdk.SessionNotification, call string) string {
	for _, nt := range ns {
		var meta map[string]any
		switch u := nt.Update; {
		case u.ToolCall != nil && string(u.ToolCall.ToolCallId) == call:
			meta = u.ToolCall.Meta
		case u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == call:
			meta = u.ToolCallUpdate.Meta
		}
		if link, ok := meta[acp.MetaSubagent].(map[string]any); ok {
			if id, _ := link["childSessionId"].(string); id != "" {
				return id
			}
		}
	}
	return ""
}

// TestCancelChildByItsIDInterruptsItsTurn: a background child hangs in a
// model call after its parent's turn ended; session/cancel with the
// child's id (whether or not the client opened it) ends the child's turn
// aborted by the user, the child settles as stopped and the parent reads
// its settlement notice; a cancel of a settled child changes nothing.
func TestCancelChildByItsIDInterruptsItsTurn(t *testing.T) {
	for _, c := range []struct {
		name string
		load bool // the client opened the child with session/load first
	}{
		{"child not opened", false},
		{"child opened read-only", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxFor(t)
			m := &holdModel{Model: loadScript(t, cancelChildScript), key: "Back", entered: make(chan struct{}, 1)}
			e := start(t, t.TempDir(), m)
			e.initialize(ctx)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt: %+v, %v", r, err)
			}
			child := childIDOf(e.rec.snapshot(id), "call-bg")
			if child == "" {
				t.Fatalf("no child link on the delegation:\n%s", strings.Join(transcript(e.rec.snapshot(id)), "\n"))
			}
			select {
			case <-m.entered:
			case <-ctx.Done():
				t.Fatal("the child never made its model call")
			}
			if c.load {
				if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(child), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
					t.Fatalf("load child: %v", err)
				}
			}
			if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(child)}); err != nil {
				t.Fatalf("session/cancel: %v", err)
			}

			// The parent reads the settlement notice and answers it; the
			// delegation's call closes with the outcome.
			poll(ctx, t, "the parent answers the settlement notice", func() bool {
				return slices.Contains(transcript(e.rec.snapshot(id)), "agent_message_chunk NOTED")
			})
			if text, status, _ := lastCallText(e.rec.snapshot(id), "call-bg"); !strings.HasSuffix(text, "outcome: cancelled") || status != acpsdk.ToolCallStatusFailed {
				t.Errorf("delegation call closed %s %q, want failed with outcome: cancelled", status, text)
			}
			parent, ok := e.app.Sessions.Get(id)
			if !ok {
				t.Fatal("parent not live")
			}
			var notices []string
			for _, ev := range parent.MustEvents() {
				if ev.Type != session.TypeUserMessage {
					continue
				}
				if d, err := session.DecodeData[session.Message](ev); err == nil && d.Source.Kind != session.SourceUser {
					notices = append(notices, session.JoinText(d.Content, "\n"))
				}
			}
			if !slices.ContainsFunc(notices, func(s string) bool {
				return strings.Contains(s, "Background subagent "+child+" was stopped before it finished.")
			}) {
				t.Errorf("parent's notices = %q, want the child's stopped settlement", notices)
			}

			// The child's turn ended aborted, by the user.
			ends := childTurnEnds(t, e, child)
			if len(ends) != 1 || ends[0].Kind != session.TurnEndAborted || ends[0].Reason == nil || ends[0].Reason.Kind != "user" {
				t.Errorf("child turn ends = %+v, want one aborted by the user", ends)
			}

			// A settled child: the cancel is a no-op, the parent stays idle.
			before := len(e.rec.snapshot(id))
			if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(child)}); err != nil {
				t.Fatalf("second session/cancel: %v", err)
			}
			if _, err := e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{}); err != nil { // a round trip after the notification
				t.Fatal(err)
			}
			if after := len(e.rec.snapshot(id)); after != before {
				t.Errorf("a cancel of a settled child sent %d updates on the parent", after-before)
			}
		})
	}
}

// childTurnEnds reads the turn/end records of child id from its log.
func childTurnEnds(t *testing.T, e *env, id string) []session.TurnEndReason {
	t.Helper()
	var events []session.Event
	if sess, ok := e.app.Sessions.Get(id); ok {
		events = sess.MustEvents()
	} else {
		snap, err := e.app.Persist.Inspect(t.Context(), id)
		if err != nil {
			t.Fatalf("read child log: %v", err)
		}
		events = snap.Events
	}
	var out []session.TurnEndReason
	for _, ev := range events {
		if ev.Type != session.TypeTurnEnd {
			continue
		}
		d, err := session.DecodeData[session.TurnEndData](ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Reason)
	}
	return out
}

func TestListChildrenThroughParentFilter(t *testing.T) {
	ctx := ctxFor(t)
	e := start(t, t.TempDir(), nil)
	e.initialize(ctx)
	cwdA, cwdB := tempCwd(t), tempCwd(t)
	a, b := e.newSession(ctx, cwdA), e.newSession(ctx, cwdB)
	mk := func(parent, cwd string, depth int) string {
		t.Helper()
		s, err := e.app.Sessions.Create(session.Header{Cwd: cwd, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: depth}, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID()
	}
	a1, a2 := mk(a, cwdA, 1), mk(a, cwdB, 1) // a child may work elsewhere (a worktree)
	a1x := mk(a1, cwdA, 2)                   // a grandchild: a1's child, not a's
	b1 := mk(b, cwdB, 1)
	// A fork names its source as parentSession too, but is a top-level
	// session, not a child.
	fork, err := e.app.Sessions.Create(session.Header{Cwd: cwdA, ParentSession: a}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	list := func(meta map[string]any, cwd *string) []string {
		t.Helper()
		r, err := e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Cwd: cwd, Meta: meta})
		if err != nil {
			t.Fatalf("session/list %v: %v", meta, err)
		}
		var ids []string
		for _, s := range r.Sessions {
			ids = append(ids, string(s.SessionId))
			if p, _ := s.Meta[acp.MetaParentSession].(string); meta[acp.MetaParentSession] != nil && p != meta[acp.MetaParentSession] {
				t.Errorf("row %s names parent %q", s.SessionId, p)
			}
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	for _, c := range []struct {
		name string
		meta map[string]any
		cwd  *string
		want []string
	}{
		{"roots only by default", nil, nil, sorted(a, b, fork.ID())},
		{"children of a", map[string]any{acp.MetaParentSession: a}, nil, sorted(a1, a2)},
		{"children of b", map[string]any{acp.MetaParentSession: b}, nil, sorted(b1)},
		{"children of a child", map[string]any{acp.MetaParentSession: a1}, nil, sorted(a1x)},
		{"children of a in cwd B", map[string]any{acp.MetaParentSession: a}, &cwdB, sorted(a2)},
		{"the filter wins over includeChildren", map[string]any{acp.MetaParentSession: a, acp.MetaIncludeChildren: true}, nil, sorted(a1, a2)},
		{"a session without children", map[string]any{acp.MetaParentSession: b1}, nil, nil},
		{"everything with includeChildren", map[string]any{acp.MetaIncludeChildren: true}, nil, sorted(a, b, fork.ID(), a1, a2, a1x, b1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := list(c.meta, c.cwd); !slices.Equal(got, c.want) {
				t.Errorf("listed %q, want %q", got, c.want)
			}
		})
	}

	for _, c := range []struct {
		name  string
		value any
		code  acp.Code
	}{
		{"not a string", 42, acp.CodeInvalidParams},
		{"not a session id", "../etc", acp.CodeInvalidSessionID},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			_, err := e.cs.ListSessions(ctx, acpsdk.ListSessionsRequest{Meta: map[string]any{acp.MetaParentSession: c.value}})
			wantRPCError(t, err, -32602, acp.MetaParentSession)
			if code := rpcDataCode(err); code != string(c.code) {
				t.Errorf("code = %q, want %s", code, c.code)
			}
		})
	}
}

// A viewed child session changes nothing: a prompt, a mode switch and a
// config option are refused as read-only, also when its header names no
// parent (a child whose parent link was lost still is a child).
func TestViewedChildRefusesChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent bool
	}{{"with parent", true}, {"header names no parent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			e := start(t, t.TempDir(), loadScript(t, echoScript))
			e.initialize(ctx)
			cwd := tempCwd(t)
			parent := ""
			if tc.parent {
				parent = e.newSession(ctx, cwd)
			}
			child, err := e.app.Sessions.Create(session.Header{Cwd: cwd, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(child.ID()), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatal(err)
			}
			id := acpsdk.SessionId(child.ID())
			_, promptErr := e.prompt(ctx, child.ID(), "hi")
			_, modeErr := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: id, ModeId: acp.ModeBypass})
			_, optErr := e.cs.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
				SessionId: id, ConfigId: "mode", Value: acpsdk.SessionConfigValueId(acp.ModeBypass)}})
			for what, err := range map[string]error{"session/prompt": promptErr, "session/set_mode": modeErr, "session/set_config_option": optErr} {
				wantRPCError(t, err, -32602, "is a subagent session")
				if code := rpcDataCode(err); code != string(acp.CodeReadOnlySession) {
					t.Errorf("%s: error code %q, want %s", what, code, acp.CodeReadOnlySession)
				}
			}
		})
	}
}
