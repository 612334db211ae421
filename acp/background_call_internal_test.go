package acp

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// logOf builds a log of events with contiguous seqs.
type logOf struct {
	t   *testing.T
	evs []session.Event
}

func (l *logOf) add(typ string, data any) session.Event {
	l.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		l.t.Fatal(err)
	}
	ev := session.Event{Type: typ, Seq: int64(len(l.evs)), Data: b}
	l.evs = append(l.evs, ev)
	return ev
}

func (l *logOf) call(id, name, args string) session.Event {
	return l.add(session.TypeToolCall, session.ToolCallData{Turn: 1, Step: 1, CallID: id, Name: name, Arguments: args})
}

// bgResult is the result of a delegation that started (or messaged)
// background child.
func (l *logOf) bgResult(id, child string) session.Event {
	return l.add(session.TypeToolResult, session.ToolResultData{Turn: 1, Step: 1,
		Message: session.Message{Role: session.RoleUser, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: id,
			Content: []session.Block{session.Text("started subagent " + child)}}}},
		Raw:     delegation.ContinuableResult(child),
		Display: &session.ToolDisplay{Meta: delegation.ChildLink(child, delegation.ModeContinuable, 1)},
	})
}

func (l *logOf) settled(child, stop, digest string) session.Event {
	return l.add(session.TypeUserMessage, session.Message{Role: session.RoleUser,
		Content: []session.Block{session.Text("Background subagent " + child + " settled.")},
		Source: session.Source{Kind: session.SourceSubagentSettled, SenderSessionID: child, Stop: stop, Digest: digest,
			Summary: "Background subagent " + child + " finished."}})
}

func (l *logOf) turnEnd() session.Event {
	return l.add(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
}

// callView is one update of a call as a client sees it.
type callView struct {
	status, title, kind, text string
	meta, raw                 bool
}

// viewsOf lists the updates of call id in us.
func viewsOf(us []acpsdk.SessionUpdate, id string) []callView {
	var out []callView
	for _, u := range us {
		var v callView
		switch {
		case u.ToolCall != nil && string(u.ToolCall.ToolCallId) == id:
			v = callView{status: string(u.ToolCall.Status), title: u.ToolCall.Title, kind: string(u.ToolCall.Kind)}
		case u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == id:
			tu := u.ToolCallUpdate
			if tu.Status != nil {
				v.status = string(*tu.Status)
			}
			if tu.Title != nil {
				v.title = *tu.Title
			}
			if tu.Kind != nil {
				v.kind = string(*tu.Kind)
			}
			if len(tu.Content) > 0 && tu.Content[0].Content != nil && tu.Content[0].Content.Content.Text != nil {
				v.text = tu.Content[0].Content.Content.Text.Text
			}
			_, v.meta = delegation.LinkedChild(tu.Meta)
			v.raw = tu.RawOutput != nil
		default:
			continue
		}
		out = append(out, v)
	}
	return out
}

// checkCallViews: the call's status never leaves a closing status, it is
// closed exactly once, every update after its tool_call repeats its
// title and kind, and no update repeats the one before it.
func checkCallViews(t *testing.T, vs []callView, title string) {
	t.Helper()
	closed := 0
	for i, v := range vs {
		if closed > 0 {
			t.Errorf("update %d after the call closed: %+v", i, v)
		}
		if v.status == "completed" || v.status == "failed" {
			closed++
		}
		if v.title != title || v.kind != "think" {
			t.Errorf("update %d shows title %q kind %q, want %q think", i, v.title, v.kind, title)
		}
		if i > 0 && v == vs[i-1] {
			t.Errorf("update %d repeats the one before: %+v", i, v)
		}
	}
	if closed != 1 {
		t.Errorf("closed %d times, want once: %+v", closed, vs)
	}
}

const bgArgs = `{"description":"Back","prompt":"Work."}`
const bgTitle = "Back (subagent)"

// TestBackgroundCallStaysOpenUntilSettled: live, with throttled digests:
// the result leaves the call in_progress past the turn's end, the digest
// follows on it (an unchanged one is not sent again), the final digest
// closes it, and neither the settlement notice nor a late tick reopens or
// repeats it. A replay of the same log shows the same open-then-closed
// call from the notice.
func TestBackgroundCallStaysOpenUntilSettled(t *testing.T) {
	const child = "child-1"
	link := delegation.ChildLink(child, delegation.ModeContinuable, 1)
	final := "turn 1\n> DONE\noutcome: completed"
	for _, tc := range []struct{ name, stop, status string }{
		{"completed", delegation.StopCompleted, "completed"},
		{"failed", delegation.StopError, "failed"},
		{"cancelled", delegation.StopAborted, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &logOf{t: t}
			tr := newTranslator(nil)
			var live []acpsdk.SessionUpdate
			ev := func(e session.Event) { live = append(live, tr.event(e, false)...) }
			prog := func(text, status string) {
				live = append(live, tr.progress(agent.ToolProgress{CallID: "call-bg", Progress: tool.Progress{Text: text, Status: status, Meta: link}})...)
			}
			ev(l.call("call-bg", "subagent", bgArgs))
			prog("started subagent "+child, "")
			ev(l.bgResult("call-bg", child))
			ev(l.turnEnd())
			prog("turn 1", "")
			prog("turn 1", "") // a tick with nothing new
			prog("turn 1\n> DONE", "")
			text := strings.Replace(final, "completed", tc.stop, 1)
			prog(text, tc.status)
			ev(l.settled(child, tc.stop, text))
			prog(text, tc.status) // a late duplicate
			vs := viewsOf(live, "call-bg")
			checkCallViews(t, vs, bgTitle)
			want := []string{"in_progress", "in_progress", "in_progress", "in_progress", "in_progress", tc.status}
			var got []string
			for _, v := range vs {
				got = append(got, v.status)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("statuses %v, want %v", got, want)
			}
			if last := vs[len(vs)-1]; last.text != text || !last.meta {
				t.Errorf("closed with %q (link %v), want the final digest with the link", last.text, last.meta)
			}

			// The replay closes it from the notice, once.
			rt := newTranslator(nil)
			var replay []acpsdk.SessionUpdate
			for _, e := range l.evs {
				replay = append(replay, rt.event(e, true)...)
			}
			rvs := viewsOf(replay, "call-bg")
			checkCallViews(t, rvs, bgTitle)
			if last := rvs[len(rvs)-1]; last.status != tc.status || last.text != text || !last.meta {
				t.Errorf("replay closed it as %+v", last)
			}
		})
	}
}

// TestEarlyFinalDigestIsNotDropped: a child that settles before its
// delegation returned has its final digest held until the call's result:
// the result closes the call with it, once.
func TestEarlyFinalDigestIsNotDropped(t *testing.T) {
	const child = "child-2"
	l := &logOf{t: t}
	tr := newTranslator(nil)
	var live []acpsdk.SessionUpdate
	live = append(live, tr.event(l.call("call-bg", "subagent", bgArgs), false)...)
	final := "turn 1\noutcome: completed"
	live = append(live, tr.progress(agent.ToolProgress{CallID: "call-bg", Progress: tool.Progress{Text: final, Status: "completed",
		Meta: delegation.ChildLink(child, delegation.ModeContinuable, 1)}})...)
	live = append(live, tr.event(l.bgResult("call-bg", child), false)...)
	live = append(live, tr.event(l.settled(child, delegation.StopCompleted, final), false)...)
	vs := viewsOf(live, "call-bg")
	checkCallViews(t, vs, bgTitle)
	if last := vs[len(vs)-1]; last.status != "completed" || last.text != final {
		t.Errorf("closed with %+v, want the held final digest", last)
	}
}

// TestSyncDigestClosesFromTheNotice: with digests only at settlement
// (scenario runs), the notice closes the call with its digest and link.
// A later send_message watching the same child closes the earlier call
// on replay as the live handover did.
func TestSyncDigestClosesFromTheNotice(t *testing.T) {
	const child = "child-3"
	l := &logOf{t: t}
	tr := newTranslator(nil)
	var live []acpsdk.SessionUpdate
	for _, e := range []session.Event{
		l.call("call-bg", "subagent", bgArgs), l.bgResult("call-bg", child), l.turnEnd(),
		l.call("call-msg", "send_message", `{"subagent_id":"child-3","message":"More."}`), l.bgResult("call-msg", child), l.turnEnd(),
		l.settled(child, delegation.StopCompleted, "turn 2\noutcome: completed"),
	} {
		live = append(live, tr.event(e, false)...)
	}
	first := viewsOf(live, "call-bg")
	checkCallViews(t, first, bgTitle)
	if last := first[len(first)-1]; last.status != "completed" || last.text != textHandedOver {
		t.Errorf("the start's call closed as %+v, want handed over", last)
	}
	msg := viewsOf(live, "call-msg")
	if last := msg[len(msg)-1]; last.status != "completed" || last.text != "turn 2\noutcome: completed" || !last.meta {
		t.Errorf("the message's call closed as %+v", last)
	}
	if n := len(msg); n != 3 {
		t.Errorf("the message's call had %d updates, want tool_call, open result, close: %+v", n, msg)
	}
}

// TestSettlementRecapBetweenPrompts: through the emitter, a settlement
// pushed while no prompt runs is recapped once at the start of the next
// prompt; one during a prompt is not.
func TestSettlementRecapBetweenPrompts(t *testing.T) {
	var (
		mu   sync.Mutex
		sent []acpsdk.SessionUpdate
		wg   sync.WaitGroup
	)
	send := func(_ context.Context, u acpsdk.SessionUpdate) error {
		mu.Lock()
		sent = append(sent, u)
		mu.Unlock()
		return nil
	}
	em := newEmitter(newTranslator(nil), send, &wg, slog.New(slog.DiscardHandler))
	em.resume()
	l := &logOf{t: t}
	push := func(e session.Event) { em.pushLive(agent.Update{Event: &e}) }
	notices := func() int {
		<-em.barrier()
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, u := range sent {
			if u.AgentThoughtChunk != nil && strings.Contains(u.AgentThoughtChunk.Content.Text.Text, "While no prompt was running") {
				n++
			}
		}
		return n
	}
	em.startPrompt()
	push(l.call("call-bg", "subagent", bgArgs))
	push(l.bgResult("call-bg", "c4"))
	push(l.turnEnd())
	em.endPrompt()
	push(l.settled("c4", delegation.StopCompleted, "outcome: completed"))
	if n := notices(); n != 0 {
		t.Fatalf("%d recaps before the next prompt", n)
	}
	em.startPrompt()
	if n := notices(); n != 1 {
		t.Fatalf("recaps at the next prompt: %d, want 1", n)
	}
	em.endPrompt()
	em.startPrompt()
	if n := notices(); n != 1 {
		t.Errorf("recap shown again at a later prompt (%d)", n)
	}
	push(l.settled("c4", delegation.StopCompleted, "outcome: completed"))
	em.endPrompt()
	em.startPrompt()
	if n := notices(); n != 1 {
		t.Errorf("a settlement during a prompt was recapped (%d)", n)
	}
	wg.Wait()
}
