package acp

// This file makes a child's permission request durable in its root
// session's log. A child (subagent) session's client view is its root
// session: the gate shows the child's call there as a tool call of its
// own ("<child session id>/<call id>") and asks about it. Both the
// question and its outcome are recorded in the root's log as ignorable
// subagent/permission events, and each is durable before the update it
// renders reaches the client, so a session/load replay of the root shows
// the same tool call as the live stream, also after a restart.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// TypeChildPermission is the root-session log event of a child's
// permission request: appended ignorable (builds that do not know it still
// read the log; it is no surface event, so the model never sees it) once
// with Status "asked" before the request is shown, and once more with the
// outcome before the shown call is closed. It may come between turns (a
// background child asks after the root's turn ended); it opens and closes
// no turn, so torn-tail recovery and OpenTurn are unaffected.
const TypeChildPermission = "subagent/permission"

// Status values of a subagent/permission event.
const (
	// ChildPermissionAsked: the request was shown and sent; the call is
	// pending.
	ChildPermissionAsked = "asked"
	// ChildPermissionAllowed: the user allowed the call (completed).
	ChildPermissionAllowed = "allowed"
	// ChildPermissionRefused: the user rejected the call, the request was
	// cancelled, or it could not be completed (failed).
	ChildPermissionRefused = "refused"
)

// ChildPermissionData is the payload of a subagent/permission event.
// ToolCallID, ChildSessionID and Depth are set on every record; Title,
// Kind and Display only on the "asked" record.
type ChildPermissionData struct {
	// ToolCallID is the call's id on the root session: "<child session
	// id>/<the child's call id>".
	ToolCallID     string `json:"toolCallId"`
	ChildSessionID string `json:"childSessionId"`
	// Depth is the child's delegation depth (1 for a direct child).
	Depth int `json:"depth"`
	// Status is ChildPermissionAsked, ChildPermissionAllowed or
	// ChildPermissionRefused.
	Status string `json:"status"`
	// Title is shown as is: prefixed "[<child's label>] ".
	Title string `json:"title,omitempty"`
	// Kind is the ACP tool kind (edit, execute, read, ...).
	Kind string `json:"kind,omitempty"`
	// Display is what the call will do (diffs, terminal, _meta), with
	// locations made absolute against the child's cwd (the root's cwd may
	// differ).
	Display *session.ToolDisplay `json:"display,omitempty"`
	// Detail and Protected are the request's text content (the whole
	// command, the MCP arguments) and why its path is protected.
	Detail    string `json:"detail,omitempty"`
	Protected string `json:"protected,omitempty"`
}

// childAsk is one child permission request recorded in the root's log.
type childAsk struct {
	b    *bound
	data ChildPermissionData
}

// childAsks is the set of children's permission requests in flight (by
// root session id and tool call id), so that closing the dangling ones
// of a log (settleDangling) never closes a request still being asked.
type childAsks struct {
	mu     sync.Mutex
	flying map[[2]string]bool
}

func (c *childAsks) add(root, callID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flying == nil {
		c.flying = map[[2]string]bool{}
	}
	c.flying[[2]string{root, callID}] = true
}

func (c *childAsks) done(root, callID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.flying, [2]string{root, callID})
}

func (c *childAsks) inFlight(root, callID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flying[[2]string{root, callID}]
}

// recordChildAsk appends the "asked" record of req to the root session's
// log and makes it durable before the pending tool_call it renders is
// sent. It returns the tool call the session/request_permission refers to,
// rendered from the record as appended, so the request, the live stream
// and a replay agree. ask is nil when nothing was appended; on an error
// with a non-nil ask the caller settles it.
func (g *gate) recordChildAsk(ctx context.Context, b *bound, req workspace.PermissionRequest) (*childAsk, acpsdk.ToolCallUpdate, error) {
	d := g.childAskData(req)
	g.s.asks.add(b.id, d.ToolCallID)
	ev, err := g.s.recordDurably(ctx, b, d)
	if ev.Type == "" {
		g.s.asks.done(b.id, d.ToolCallID)
		return nil, acpsdk.ToolCallUpdate{}, err
	}
	ask := &childAsk{b: b, data: d}
	if err != nil {
		return ask, acpsdk.ToolCallUpdate{}, err
	}
	rec, err := session.DecodeData[ChildPermissionData](ev)
	if err != nil {
		return ask, acpsdk.ToolCallUpdate{}, err
	}
	return ask, childAskCall(rec), nil
}

// settle records the outcome of the request; the closing update follows
// once it is durable. A failure is logged: the request itself was decided.
func (a *childAsk) settle(ctx context.Context, s *Server, allowed bool) {
	defer s.asks.done(a.b.id, a.data.ToolCallID)
	d := a.data.outcome(allowed)
	// The outcome must be recorded even when the prompt was cancelled.
	if _, err := s.recordDurably(context.WithoutCancel(ctx), a.b, d); err != nil {
		s.log.Warn("record the outcome of a child's permission request", "session_id", a.b.id,
			"tool_call_id", d.ToolCallID, "err", err)
	}
}

// recordDurably appends d to b's log and checkpoints it. The emitter holds
// every update queued from the moment before the append until the
// checkpoint returned, so nothing the record renders (nor anything
// appended meanwhile) reaches the client before it is durable. The record
// is appended even when the checkpoint fails (it then returns an error).
func (s *Server) recordDurably(ctx context.Context, b *bound, d ChildPermissionData) (session.Event, error) {
	if b.sess == nil {
		return session.Event{}, errors.New("the root session has no live log")
	}
	release := b.em.hold()
	defer release()
	ev, err := b.sess.Append(TypeChildPermission, d, session.Ignorable())
	if err != nil {
		return session.Event{}, fmt.Errorf("record a child's permission request in session %s: %w", b.id, err)
	}
	if err := s.makeDurable(ctx, b.id, ev.Seq); err != nil {
		return ev, fmt.Errorf("record a child's permission request in session %s: %w", b.id, err)
	}
	return ev, nil
}

// maxTitleLabel caps a child's label in a question's title, in runes.
const maxTitleLabel = 40

// childTitleLabel is a child's label as a question's title shows it in
// brackets: escaped, with "[" and "]" made parentheses (a label holding
// "] " could pose as the start of the title the person reads), and
// capped at maxTitleLabel runes (the model names its children; a long
// label would push what runs out of sight).
func childTitleLabel(label string) string {
	name := strings.NewReplacer("[", "(", "]", ")").Replace(workspace.EscapeTitle(label))
	if r := []rune(name); len(r) > maxTitleLabel {
		name = string(r[:maxTitleLabel-1]) + "…"
	}
	return name
}

// childAskData is the "asked" record of req.
func (g *gate) childAskData(req workspace.PermissionRequest) ChildPermissionData {
	title := requestTitle(req)
	name := childTitleLabel(g.child.label)
	if name == "" {
		name = g.child.id
	}
	d := ChildPermissionData{
		ToolCallID:     g.child.id + "/" + req.CallID,
		ChildSessionID: g.child.id,
		Depth:          g.child.depth,
		Status:         ChildPermissionAsked,
		Title:          "[" + name + "] " + title,
		Kind:           req.Kind,
		Detail:         req.Detail,
		Protected:      req.Protected,
	}
	if req.Display != nil {
		disp := *req.Display
		disp.Locations = nil
		for _, l := range req.Display.Locations {
			if l.Path != "" && !filepath.IsAbs(l.Path) && g.cwd != "" {
				l.Path = filepath.Join(g.cwd, l.Path)
			}
			disp.Locations = append(disp.Locations, l)
		}
		d.Display = &disp
	}
	return d
}

// childAskCall renders an "asked" record as the tool call a
// session/request_permission refers to.
func childAskCall(d ChildPermissionData) acpsdk.ToolCallUpdate {
	call := acpsdk.ToolCallUpdate{
		ToolCallId: acpsdk.ToolCallId(d.ToolCallID),
		Title:      acpsdk.Ptr(d.Title),
		Content:    requestContent(d.Detail, d.Protected, d.Display),
	}
	if d.Kind != "" {
		call.Kind = acpsdk.Ptr(acpsdk.ToolKind(d.Kind))
	}
	var meta map[string]any
	if d.Display != nil {
		call.Locations = acpLocations(d.Display.Locations, "")
		meta = d.Display.Meta
	}
	call.Meta = mergeMeta(meta, map[string]any{MetaSubagent: map[string]any{
		"childSessionId": d.ChildSessionID,
		"depth":          d.Depth,
	}})
	return call
}

// childPermissionUpdate renders a subagent/permission event: the asked
// record as a pending tool_call, an outcome as the tool_call_update that
// closes it (completed when allowed, failed otherwise).
func childPermissionUpdate(ev session.Event) []acpsdk.SessionUpdate {
	d, err := session.DecodeData[ChildPermissionData](ev)
	if err != nil || d.ToolCallID == "" {
		return nil
	}
	id := acpsdk.ToolCallId(d.ToolCallID)
	switch d.Status {
	case ChildPermissionAsked:
		return []acpsdk.SessionUpdate{childCallStart(childAskCall(d))}
	case ChildPermissionAllowed:
		return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(id, acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusCompleted))}
	case ChildPermissionRefused:
		return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(id, acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusFailed))}
	}
	return nil
}

// outcome is the record settling the request d asked.
func (d ChildPermissionData) outcome(allowed bool) ChildPermissionData {
	o := ChildPermissionData{
		ToolCallID:     d.ToolCallID,
		ChildSessionID: d.ChildSessionID,
		Depth:          d.Depth,
		Status:         ChildPermissionRefused,
	}
	if allowed {
		o.Status = ChildPermissionAllowed
	}
	return o
}

// settleDangling records a refusal for every child permission request of
// b's log that has no outcome and is not in flight: the process that
// asked ended (crash, kill) before recording the answer, so the user's
// decision, if any, was never applied. A session bound without a replay
// of such a log shows the request closed as failed, as the child's own
// log shows its call interrupted. It passes err through; a failure to
// record is logged (the load itself succeeded).
func (s *Server) settleDangling(ctx context.Context, b *bound, err error) (*bound, error) {
	if err != nil || b == nil || b.sess == nil || b.readOnly {
		return b, err
	}
	events, rerr := b.sess.EventsView()
	if rerr != nil {
		s.log.Warn("read the log for interrupted permission requests of children", "session_id", b.id, "err", rerr)
	}
	for _, d := range danglingAsks(events) {
		if s.asks.inFlight(b.id, d.ToolCallID) {
			continue
		}
		if _, rerr := s.recordDurably(ctx, b, d.outcome(false)); rerr != nil {
			s.log.Warn("close an interrupted permission request of a child", "session_id", b.id,
				"tool_call_id", d.ToolCallID, "err", rerr)
			break
		}
	}
	return b, nil
}

// danglingAsks returns the "asked" records of events without an outcome,
// in log order.
func danglingAsks(events []session.Event) []ChildPermissionData {
	var (
		order []string
		asked = map[string]ChildPermissionData{}
	)
	for _, ev := range events {
		if ev.Type != TypeChildPermission {
			continue
		}
		d, err := session.DecodeData[ChildPermissionData](ev)
		if err != nil || d.ToolCallID == "" {
			continue
		}
		if d.Status == ChildPermissionAsked {
			if _, ok := asked[d.ToolCallID]; !ok {
				order = append(order, d.ToolCallID)
			}
			asked[d.ToolCallID] = d
			continue
		}
		delete(asked, d.ToolCallID)
	}
	var out []ChildPermissionData
	for _, id := range order {
		if d, ok := asked[id]; ok {
			out = append(out, d)
			delete(asked, id)
		}
	}
	return out
}
