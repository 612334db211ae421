package acp_test

// This file tests, over the real connection, what a client that listens
// only during a prompt needs from background children (issue 47 item 2):
// a question a background child asks between prompts is held and asked
// again at the next prompt (its model told it is pending), or refused at
// its deadline with a reason the child, the root's notice and the
// listings show; a settlement between prompts is recapped once at the
// next prompt and is in the replay; a background delegation's call never
// goes back from a closing status, is closed once, repeats its title and
// kind, and no update of it is sent twice. A client with the subagents
// capability keeps the ACP v1 behaviour (questions asked at once on the
// child's own session).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/acpschema"
	"github.com/acp-agent/acp-agent/subagent"
)

const heldScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Writer", "prompt": "Write it."}'
    - text: STARTED
    - text: AGAIN
    - text: NOTED
    - text: MORE
  Writer:
    - tool_calls:
        - id: w-1
          name: write
          arguments: '{"path": "out.txt", "content": "x"}'
    - text: WRITTEN
`

// rootEvents is session id's log (live).
func rootEvents(t *testing.T, e *env, id string) []session.Event {
	t.Helper()
	s, ok := e.app.Sessions.Get(id)
	if !ok {
		t.Fatalf("session %s not live", id)
	}
	return s.MustEvents()
}

// userMessages lists session events' user messages as "kind: text".
func userMessages(events []session.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Type != session.TypeUserMessage {
			continue
		}
		msg, err := session.DecodeData[session.Message](ev)
		if err != nil {
			continue
		}
		out = append(out, msg.Source.Kind+": "+session.JoinText(msg.Content, " "))
	}
	return out
}

// listedQuestion is the "question" of child's row in the subagents/list
// answer for root, nil when the row has none.
func listedQuestion(ctx context.Context, t *testing.T, e *env, root, child string) map[string]any {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"sessionId": root})
	res, err := e.app.Extensions[acp.SubagentsListMethod](ctx, params)
	if err != nil {
		t.Fatalf("subagents/list: %v", err)
	}
	b, _ := json.Marshal(res)
	var out struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, row := range out.Entries {
		if row["id"] == child {
			q, _ := row["question"].(map[string]any)
			return q
		}
	}
	t.Fatalf("no row for %s in %s", child, b)
	return nil
}

// TestHeldQuestion_AskedAgainAtNextPrompt: a background child asks while
// no prompt of its root runs. A client without the capability is not
// asked then (it would drop the request): the question is held, listed
// as held, and asked on the root session when the next prompt starts,
// whose model is told it is pending; answered, the child goes on. A
// client with the capability is asked at once, on the child's session.
func TestHeldQuestion_AskedAgainAtNextPrompt(t *testing.T) {
	for _, kind := range []string{clientPlain, clientV1} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxFor(t)
			gate := &gateModel{Model: loadScript(t, heldScript), key: "Writer", release: make(chan struct{})}
			c := newWSClient(false, false, "allow_once")
			e := startSubagents(t, t.TempDir(), gate, c, kind)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			child := findChild(t, e.env, id)
			close(gate.release) // the child works, and asks, between prompts
			held := e.app.Server.Questions()

			if kind == clientV1 {
				poll(ctx, t, "the child's question is asked at once", func() bool { return len(c.requests()) == 1 })
				if r := c.requests()[0]; string(r.SessionId) != child {
					t.Errorf("asked on %s, want the child's own session %s", r.SessionId, child)
				}
				if n := held.Held(id); n != 0 {
					t.Errorf("%d questions held for a client with the capability", n)
				}
				awaitSettled(ctx, t, e.env, child)
				return
			}

			poll(ctx, t, "the child's question is held", func() bool { return held.Held(id) == 1 })
			if n := len(c.requests()); n != 0 {
				t.Fatalf("asked %d times between prompts", n)
			}
			if q := listedQuestion(ctx, t, e.env, id, child); q == nil || q["state"] != acp.QuestionHeld {
				t.Errorf("listed question = %v, want held", q)
			}
			before := len(e.tap.lines())
			if _, err := e.prompt(ctx, id, "go on"); err != nil {
				t.Fatal(err)
			}
			// The question (its tool_call first) is on the wire in the
			// next prompt, before the prompt's own updates and response.
			lines := e.tap.lines()[before:]
			call := slices.IndexFunc(lines, func(l string) bool {
				return strings.Contains(l, `"sessionUpdate":"tool_call"`) && strings.Contains(l, `"toolCallId":"`+child+`/w-1"`)
			})
			ask := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"method":"session/request_permission"`) })
			text := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"sessionUpdate":"agent_message_chunk"`) })
			resp := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"stopReason"`) })
			if call < 0 || ask < 0 || resp < 0 || call > ask || ask > resp || (text >= 0 && ask > text) {
				t.Errorf("in the next prompt: the child's tool_call at %d, the question at %d, the first text at %d, the response at %d",
					call, ask, text, resp)
			}
			for _, f := range frames(lines) {
				acpschema.CheckMessage(t, []byte(f.line))
			}
			poll(ctx, t, "the client handles the question", func() bool { return len(c.requests()) == 1 })
			reqs := c.requests()
			if string(reqs[0].SessionId) != id || reqs[0].ToolCall.Title == nil || !strings.HasPrefix(*reqs[0].ToolCall.Title, "[Writer] ") {
				t.Fatalf("request at the next prompt = %+v, want the child's question on the root", reqs[0])
			}
			// The model was told, before the person's message.
			msgs := userMessages(rootEvents(t, e.env, id))
			note := slices.IndexFunc(msgs, func(m string) bool {
				return strings.HasPrefix(m, session.SourcePlugin+": ") && strings.Contains(m, "still pending") &&
					strings.Contains(m, "Writer ("+child+")")
			})
			goOn := slices.Index(msgs, session.SourceUser+": go on")
			if note < 0 || goOn < 0 || note > goOn {
				t.Errorf("the model's messages %q: want the pending note before %q", msgs, "go on")
			}
			awaitSettled(ctx, t, e.env, child)
			if b, err := os.ReadFile(filepath.Join(cwd, "out.txt")); err != nil || string(b) != "x" {
				t.Errorf("the allowed write: %q, %v", b, err)
			}
			if q := listedQuestion(ctx, t, e.env, id, child); q != nil {
				t.Errorf("listed question after the answer = %v, want none", q)
			}
		})
	}
}

// TestHeldQuestion_RefusedAtDeadline: a held question nobody answers
// within the deadline is refused, never asked; the child's model gets
// the reason, the root session a notice (live and in the replay) and its
// model a note, and the listing shows it refused with the reason.
func TestHeldQuestion_RefusedAtDeadline(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	fire := make(chan time.Time)
	var (
		mu    sync.Mutex
		asked []time.Duration
	)
	gate := &gateModel{Model: loadScript(t, heldScript), key: "Writer", release: make(chan struct{})}
	c := newWSClient(false, false, "allow_once")
	e := startSubagents(t, dir, gate, c, clientPlain, func(cfg *app.Config) {
		cfg.Testing.QuestionAfter = func(d time.Duration) <-chan time.Time {
			mu.Lock()
			asked = append(asked, d)
			mu.Unlock()
			return fire
		}
	})
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "delegate"); err != nil {
		t.Fatal(err)
	}
	child := findChild(t, e.env, id)
	close(gate.release)
	held := e.app.Server.Questions()
	poll(ctx, t, "the child's question is held", func() bool { return held.Held(id) == 1 })
	close(fire) // the deadline passes
	awaitSettled(ctx, t, e.env, child)
	if n := len(c.requests()); n != 0 {
		t.Errorf("the expired question was asked %d times", n)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != acp.DefaultQuestionTimeout {
		t.Errorf("deadlines asked for %v, want one of %s", asked, acp.DefaultQuestionTimeout)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(cwd, "out.txt")); err == nil {
		t.Error("the refused write went through")
	}
	reason := "nobody answered it within 10m0s"
	raw, err := os.ReadFile(filepath.Join(e.app.Persist.Dir(), child+".jsonl"))
	if err != nil || !strings.Contains(string(raw), reason) {
		t.Errorf("the child's log does not give its model the reason %q (%v)", reason, err)
	}
	q := listedQuestion(ctx, t, e.env, id, child)
	if q == nil || q["state"] != acp.QuestionRefused || !strings.Contains(fmt.Sprint(q["reason"]), reason) {
		t.Errorf("listed question = %v, want refused with the reason", q)
	}
	var notices []string
	for _, ev := range rootEvents(t, e.env, id) {
		if ev.Type == session.TypeNotice {
			d, _ := session.DecodeData[session.NoticeData](ev)
			notices = append(notices, d.Kind+": "+d.Message)
		}
	}
	if len(notices) != 1 || !strings.HasPrefix(notices[0], "question-refused: ") || !strings.Contains(notices[0], reason) {
		t.Errorf("root notices = %q, want the refusal", notices)
	}
	// The root's model reads it at its next turn (the settlement's).
	poll(ctx, t, "the root's model is told of the refusal", func() bool {
		return slices.ContainsFunc(userMessages(rootEvents(t, e.env, id)), func(m string) bool {
			return strings.HasPrefix(m, session.SourcePlugin+": ") && strings.Contains(m, "was refused")
		})
	})
	e.stop()

	// The notice is in the replay.
	e2 := startSubagents(t, dir, loadScript(t, heldScript), newWSClient(false, false), clientPlain)
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(transcript(e2.rec.snapshot(id)), func(l string) bool {
		return strings.Contains(l, "agent_thought_chunk") && strings.Contains(l, "was refused")
	}) {
		t.Errorf("the replay does not show the refusal: %q", transcript(e2.rec.snapshot(id)))
	}
}

const settleScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: STARTED
    - text: NOTED
    - text: SECOND
    - text: THIRD
  Back:
    - text: BACK_DONE
`

// recapsIn counts the recaps of settlements between prompts in ns.
func recapsIn(ns []acpsdk.SessionNotification) int {
	n := 0
	for _, nt := range ns {
		if u := nt.Update.AgentThoughtChunk; u != nil && u.Content.Text != nil && strings.Contains(u.Content.Text.Text, "While no prompt was running") {
			n++
		}
	}
	return n
}

// TestSettlementShownOnceAtNextPrompt: a background child that settles
// between prompts is recapped at the start of the next prompt, once (not
// at the one after), for either client; the replay closes the delegation
// with the final digest.
func TestSettlementShownOnceAtNextPrompt(t *testing.T) {
	for _, kind := range []string{clientPlain, clientV1} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxFor(t)
			dir := t.TempDir()
			gate := &gateModel{Model: loadScript(t, settleScript), key: "Back", release: make(chan struct{})}
			c := newWSClient(false, false)
			e := startSubagents(t, dir, gate, c, kind)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate"); err != nil {
				t.Fatal(err)
			}
			back := findChild(t, e.env, id)
			close(gate.release)
			awaitSettled(ctx, t, e.env, back)
			awaitNoted(ctx, t, e.env, id)
			if n := recapsIn(e.rec.snapshot(id)); n != 0 {
				t.Fatalf("%d recaps before the next prompt", n)
			}
			mark := len(e.rec.snapshot(id))
			if _, err := e.prompt(ctx, id, "second"); err != nil {
				t.Fatal(err)
			}
			second := e.rec.snapshot(id)[mark:]
			if n := recapsIn(second); n != 1 {
				t.Fatalf("%d recaps in the next prompt, want 1: %q", n, transcript(second))
			}
			first := slices.IndexFunc(second, func(n acpsdk.SessionNotification) bool { return recapsIn([]acpsdk.SessionNotification{n}) == 1 })
			if first != 0 {
				t.Errorf("the recap is update %d of the prompt, want the first: %q", first, transcript(second))
			}
			text := second[first].Update.AgentThoughtChunk.Content.Text.Text
			for _, want := range []string{"Back (subagent)", back, "outcome: completed"} {
				if !strings.Contains(text, want) {
					t.Errorf("recap %q does not say %q", text, want)
				}
			}
			mark = len(e.rec.snapshot(id))
			if _, err := e.prompt(ctx, id, "third"); err != nil {
				t.Fatal(err)
			}
			if n := recapsIn(e.rec.snapshot(id)[mark:]); n != 0 {
				t.Errorf("the recap came again at a later prompt")
			}
			e.stop()

			e2 := startSubagents(t, dir, loadScript(t, settleScript), newWSClient(false, false), kind)
			if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
				t.Fatal(err)
			}
			replay := e2.rec.snapshot(id)
			if text, status, _ := lastCallText(replay, "call-bg"); status != acpsdk.ToolCallStatusCompleted || !strings.Contains(text, "outcome: completed") {
				t.Errorf("replay of the delegation: %s %q, want closed with the final digest", status, text)
			}
		})
	}
}

// callStatuses checks the updates of call id in ns: closed exactly once,
// never reopened, every update after the tool_call with the title and
// kind; it returns the closing update's text and status.
func checkBackgroundCall(t *testing.T, ns []acpsdk.SessionNotification, id, title string) (string, acpsdk.ToolCallStatus) {
	t.Helper()
	var (
		statuses []string
		closed   int
		text     string
		last     acpsdk.ToolCallStatus
	)
	for _, n := range ns {
		u := n.Update.ToolCallUpdate
		if u == nil || string(u.ToolCallId) != id {
			continue
		}
		if closed > 0 {
			t.Errorf("an update after the call closed: %s", render(n))
		}
		if u.Title == nil || *u.Title != title || u.Kind == nil || *u.Kind != acpsdk.ToolKindThink {
			t.Errorf("an update without the title and kind: %s", render(n))
		}
		if u.Status != nil {
			statuses = append(statuses, string(*u.Status))
			if *u.Status == acpsdk.ToolCallStatusCompleted || *u.Status == acpsdk.ToolCallStatusFailed {
				closed++
				last = *u.Status
				if len(u.Content) > 0 && u.Content[0].Content != nil && u.Content[0].Content.Content.Text != nil {
					text = u.Content[0].Content.Content.Text.Text
				}
			}
		}
	}
	if closed != 1 {
		t.Errorf("call %s closed %d times (statuses %v), want once", id, closed, statuses)
	}
	return text, last
}

// noRepeatedUpdates: no tool_call_update line is written twice.
func noRepeatedUpdates(t *testing.T, lines []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range lines {
		if !strings.Contains(l, `"sessionUpdate":"tool_call_update"`) {
			continue
		}
		if seen[l] {
			t.Errorf("update sent twice: %s", l)
		}
		seen[l] = true
	}
}

// TestBackgroundDelegation_OpenUntilSettled: with throttled digests, a
// background delegation's call stays in_progress past the parent's turn,
// a tick with nothing new sends nothing, and the settlement closes it
// once; no update is sent twice; for either client.
func TestBackgroundDelegation_OpenUntilSettled(t *testing.T) {
	for _, kind := range []string{clientPlain, clientV1} {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxFor(t)
			ticks := make(chan time.Time)
			gate := &keyGate{Model: loadScript(t, digestScript), key: "Back", call: 1, entered: make(chan struct{}, 1), release: make(chan struct{})}
			c := newWSClient(false, false)
			e := startSubagents(t, t.TempDir(), gate, c, kind, func(cfg *app.Config) {
				cfg.Testing.DigestTicks = func() (<-chan time.Time, func()) { return ticks, func() {} }
			})
			cwd := tempCwd(t)
			for _, f := range []string{"fore.txt", "back.txt"} {
				if err := os.WriteFile(filepath.Join(cwd, f), []byte("text\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "delegate twice"); err != nil {
				t.Fatal(err)
			}
			if _, status, _ := lastCallText(e.rec.snapshot(id), "call-bg"); status != acpsdk.ToolCallStatusInProgress {
				t.Errorf("the delegation after the parent's turn: %s, want in_progress", status)
			}
			select {
			case <-gate.entered:
			case <-ctx.Done():
				t.Fatal("the background child never made its second model call")
			}
			tick := func() {
				select {
				case ticks <- time.Time{}:
				case <-ctx.Done():
					t.Fatal("no digest ticker")
				}
			}
			tick()
			if err := e.rec.await(ctx, func(ns []acpsdk.SessionNotification) bool {
				text, _, _ := lastCallText(ns, "call-bg")
				return strings.HasPrefix(text, "turn 1\n")
			}); err != nil {
				t.Fatal("no digest after the tick")
			}
			_, _, n := lastCallText(e.rec.snapshot(id), "call-bg")
			tick() // nothing new
			tick() // the ticker took the one before: it was handled
			if err := e.app.Server.Shown(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, _, m := lastCallText(e.rec.snapshot(id), "call-bg"); m != n {
				t.Errorf("an unchanged digest was sent again (%d updates, then %d)", n, m)
			}
			close(gate.release)
			awaitNoted(ctx, t, e.env, id)
			text, status := checkBackgroundCall(t, e.rec.snapshot(id), "call-bg", "Back (subagent)")
			if status != acpsdk.ToolCallStatusCompleted || !strings.HasSuffix(text, "outcome: completed") {
				t.Errorf("closed %s with %q", status, text)
			}
			noRepeatedUpdates(t, e.tap.lines())
		})
	}
}

const endingScript = `
model:
  main:
    - tool_calls:
        - id: call-bg
          name: subagent
          arguments: '{"description": "Back", "prompt": "Work."}'
    - text: STARTED
    - text: NOTED
  Back:
    - error: the provider is down
`

// TestBackgroundDelegation_FailedOrCancelled: a background child that
// fails, or is cancelled, closes its delegation failed with a digest
// saying so, and (with the capability) ends idle with that stop reason.
func TestBackgroundDelegation_FailedOrCancelled(t *testing.T) {
	for _, end := range []string{"failed", "cancelled"} {
		for _, kind := range []string{clientPlain, clientV1} {
			t.Run(end+"/"+kind, func(t *testing.T) {
				ctx := ctxFor(t)
				script := endingScript
				if end == "cancelled" {
					script = strings.Replace(script, "    - error: the provider is down", "    - text: NEVER", 1)
				}
				// The child works once the parent's turn is over: failing,
				// or held in its model call until it is cancelled.
				hold := &holdModel{Model: loadScript(t, script), key: "Back", entered: make(chan struct{}, 1)}
				gate := &gateModel{Model: loadScript(t, script), key: "Back", release: make(chan struct{})}
				var m model.Model = gate
				if end == "cancelled" {
					m = hold
				}
				e := startSubagents(t, t.TempDir(), m, newWSClient(false, false), kind)
				cwd := tempCwd(t)
				id := e.newSession(ctx, cwd)
				if _, err := e.prompt(ctx, id, "delegate"); err != nil {
					t.Fatal(err)
				}
				back := findChild(t, e.env, id)
				close(gate.release)
				if end == "cancelled" {
					select {
					case <-hold.entered:
					case <-ctx.Done():
						t.Fatal("the child never called its model")
					}
					if err := e.app.Subagents.Interrupt(back, subagent.UserAuthority(id)); err != nil {
						t.Fatal(err)
					}
				}
				awaitSettled(ctx, t, e.env, back)
				awaitNoted(ctx, t, e.env, id)
				text, status := checkBackgroundCall(t, e.rec.snapshot(id), "call-bg", "Back (subagent)")
				if status != acpsdk.ToolCallStatusFailed || !strings.HasSuffix(text, "outcome: "+end) {
					t.Errorf("closed %s with %q, want failed with outcome: %s", status, text, end)
				}
				noRepeatedUpdates(t, e.tap.lines())
				if kind != clientV1 {
					return
				}
				want := "idle cancelled"
				if end == "failed" {
					want = "idle error"
				}
				awaitFrames(ctx, t, e, func(fs []frame) bool {
					st := states(fs, back)
					return len(st) > 0 && st[len(st)-1] == want
				}, func(fs []frame) string { return fmt.Sprint("states ", states(fs, back), ", want the last ", want) })
			})
		}
	}
}
