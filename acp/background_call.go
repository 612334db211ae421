package acp

// This file keeps a background delegation's tool call open until its child
// settles. The call returns at once ("started subagent …"), but the
// child's work goes on under it: the call's result is shown in_progress
// (the parent's turn may end with it open), the child's live digest
// follows on it, and it is closed exactly once, by the first of the final
// digest (live progress with a closing status) and the settlement notice
// the parent's log records (live and on replay alike). Every update after
// the tool_call repeats its title and kind: a client that forgot the call
// (CodeCompanion forgets a prompt's calls when the prompt ends) draws it
// whole instead of a bare "Other: Tool call". Nothing reopens a closed
// call, and an update equal to the last one sent on the call is not sent
// again.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// callShape is what a tool_call showed of its call: kind and title.
type callShape struct {
	kind  acpsdk.ToolKind
	title string
	// delegation: a call of a delegation tool (its progress repeats the
	// shape too: it may turn out to be a background one).
	delegation bool
}

// bgCall is a background delegation's call past its result.
type bgCall struct {
	callShape
	child string
	meta  map[string]any
	// closed: its closing update was sent; later updates are dropped.
	closed bool
	// last is the text of the last update sent on it (an unchanged digest
	// is not sent again).
	last string
}

// earlyFinal is a final digest that reached a call before its result (the
// child settled before its delegation returned): it closes the call with
// the result.
type earlyFinal struct {
	status acpsdk.ToolCallStatus
	text   string
}

// noteShape remembers the kind and title a call's tool_call showed.
func (t *translator) noteShape(callID, name string, kind acpsdk.ToolKind, title string) {
	if t.shapes == nil {
		t.shapes = map[string]callShape{}
	}
	t.shapes[callID] = callShape{kind: kind, title: title,
		delegation: delegation.IsStart(name) || name == delegation.ToolSendMessage}
}

// withShape repeats the call's title and kind on u.
func withShape(u *acpsdk.SessionUpdate, s callShape) {
	if u.ToolCallUpdate == nil || s.title == "" {
		return
	}
	u.ToolCallUpdate.Title = acpsdk.Ptr(s.title)
	if s.kind != "" {
		u.ToolCallUpdate.Kind = acpsdk.Ptr(s.kind)
	}
}

// backgroundChild is the continuable child a successful delegation result
// with link meta m started (or messaged and watches), "" for any other
// result.
func backgroundChild(m map[string]any, failed bool) string {
	if failed {
		return ""
	}
	link, _ := m[delegation.MetaKey].(map[string]any)
	if mode, _ := link["mode"].(string); mode != delegation.ModeContinuable {
		return ""
	}
	id, _ := delegation.LinkedChild(m)
	return id
}

// keepOpen turns u, the result update of call callID that started (or now
// watches) background child, into an in_progress update and tracks the
// call until the child settles. A call linked to the same child before
// and still open is closed first (a later send_message took the child's
// work over: the live stream closed it by the handover progress already).
// A final digest that came before the result closes the call with it.
func (t *translator) keepOpen(callID, child string, shape callShape, u acpsdk.SessionUpdate, text string) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	if prev, ok := t.delegations[child]; ok && prev != callID {
		if p := t.bg[prev]; p != nil && !p.closed {
			out = append(out, t.closeBg(prev, p, acpsdk.ToolCallStatusCompleted, textHandedOver))
		}
	}
	if t.bg == nil {
		t.bg = map[string]*bgCall{}
	}
	c := &bgCall{callShape: shape, child: child, meta: u.ToolCallUpdate.Meta, last: text}
	t.bg[callID] = c
	withShape(&u, shape)
	if f, ok := t.early[callID]; ok {
		delete(t.early, callID)
		u.ToolCallUpdate.Status = acpsdk.Ptr(f.status)
		u.ToolCallUpdate.Content = textContent(f.text)
		c.closed, c.last = true, f.text
		return append(out, u)
	}
	u.ToolCallUpdate.Status = acpsdk.Ptr(acpsdk.ToolCallStatusInProgress)
	return append(out, u)
}

// textHandedOver closes a call whose child a later message took over, on
// replay (live, the child's digest said so: subagent's handover).
const textHandedOver = "continued: a later message to this subagent shows its work from there"

// closeBg is the update closing background call c with status and text.
func (t *translator) closeBg(callID string, c *bgCall, status acpsdk.ToolCallStatus, text string) acpsdk.SessionUpdate {
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(callID),
		acpsdk.WithUpdateStatus(status),
		acpsdk.WithUpdateContent(textContent(text)))
	withShape(&u, c.callShape)
	if len(c.meta) > 0 {
		u.ToolCallUpdate.Meta = c.meta
	}
	c.closed, c.last = true, text
	return u
}

// bgProgress translates progress p of background call c: dropped once c
// is closed or when it repeats the last state; a closing status closes
// it; anything else keeps it in_progress.
func (t *translator) bgProgress(c *bgCall, p agent.ToolProgress) []acpsdk.SessionUpdate {
	if c.closed {
		return nil
	}
	status := acpsdk.ToolCallStatus(p.Status)
	closing := status == acpsdk.ToolCallStatusCompleted || status == acpsdk.ToolCallStatusFailed
	if !closing && p.Text == c.last {
		return nil
	}
	if closing {
		c.meta = mergeMeta(c.meta, p.Meta)
		return []acpsdk.SessionUpdate{t.closeBg(p.CallID, c, status, p.Text)}
	}
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(p.CallID),
		acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress),
		acpsdk.WithUpdateContent(textContent(p.Text)))
	withShape(&u, c.callShape)
	if len(p.Meta) > 0 {
		u.ToolCallUpdate.Meta = p.Meta
	}
	c.last = p.Text
	return []acpsdk.SessionUpdate{u}
}

// settledDigest closes a settled background child's call with its final
// digest, unless the live final digest closed it already: the notice
// records it, so the live stream and a replay close that call the same
// way. A notice of a child this session's events did not start (or one
// without a digest) shows nothing. It also keeps the recap of the
// settlement (settledRecap) for a settlement between prompts.
func (t *translator) settledDigest(msg session.Message) []acpsdk.SessionUpdate {
	callID, ok := t.delegations[msg.Source.SenderSessionID]
	var c *bgCall
	if ok {
		c = t.bg[callID]
	}
	t.recap = t.settledRecap(msg, c)
	if c == nil || c.closed || msg.Source.Digest == "" {
		return nil
	}
	status := acpsdk.ToolCallStatusCompleted
	if msg.Source.Stop != "" && msg.Source.Stop != delegation.StopCompleted {
		status = acpsdk.ToolCallStatusFailed
	}
	return []acpsdk.SessionUpdate{t.closeBg(callID, c, status, msg.Source.Digest)}
}

// noticeSettled is the kind of the notice recapping a settlement that
// happened while no prompt of the session was running.
const noticeSettled = "subagent-settled"

// settledRecap is the notice that shows settlement msg at the start of
// the next prompt: its summary, the call's title and the final digest.
func (t *translator) settledRecap(msg session.Message, c *bgCall) []acpsdk.SessionUpdate {
	text := msg.Source.Summary
	if text == "" {
		text = "Background subagent " + msg.Source.SenderSessionID + " settled."
	}
	if c != nil && c.title != "" {
		text = c.title + ": " + text
	}
	if msg.Source.Digest != "" {
		text += "\n" + msg.Source.Digest
	}
	return noticeUpdate(model.Notice{Kind: noticeSettled, Message: "While no prompt was running: " + text})
}

// takeRecap returns and clears the recap of the last settlement
// translated.
func (t *translator) takeRecap() []acpsdk.SessionUpdate {
	r := t.recap
	t.recap = nil
	return r
}
