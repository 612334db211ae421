package acp

// This file encodes the child tree (package subagent/childtree) as ACP v1
// subagent sessions, for a client that sent clientCapabilities.subagents
// (or our older private _meta["acp-agent"].subagentUpdates, now an alias
// of it): each child is announced with a subagent_update on its immediate
// parent before any of its own traffic; its prompt and every later
// send_message reach its stream as session_message (+ chunks) from the
// parent, and its reports and settlement reach the parent the same way;
// state snapshots follow it (running, requires_action while a permission
// question of its waits, idle with the stop reason, also when it
// settles); a session/load or session/resume of a parent announces its
// children again with their current state. Without the capability none of
// these frames is sent (the caller checks subagentSessions).
//
// Every frame of a child goes through the queue of its tree's root
// (childStream.queue, as item.call), so it keeps the order of the logs and
// the announcement comes first: a child's items wait until it is
// announced, and the announcement goes in front of them.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/subagent/childtree"
)

// subagentSessions reports whether the client opted in to ACP v1 subagent
// sessions: clientCapabilities.subagents, or its alias
// _meta["acp-agent"].subagentUpdates.
func (s *Server) subagentSessions() bool {
	if s.wire.subagents.Load() {
		return true
	}
	s.mu.Lock()
	caps := s.clientCaps
	s.mu.Unlock()
	return wantsSubagentUpdates(caps)
}

// sendUpdateOn writes one raw session/update payload on session id.
func (s *Server) sendUpdateOn(id string, u map[string]any, err error) {
	s.sendUpdateMeta(id, u, nil, err)
}

// sendUpdateMeta is sendUpdateOn with the notification's _meta (a child's
// link, as on every notification of its stream).
func (s *Server) sendUpdateMeta(id string, u, meta map[string]any, err error) {
	if err == nil {
		<-s.ready
		params := map[string]any{"sessionId": id, "update": u}
		if meta != nil {
			params["_meta"] = meta
		}
		var b []byte
		b, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": acpsdk.ClientMethodSessionUpdate, "params": params})
		if err == nil {
			_, err = s.out.Write(append(b, '\n'))
		}
	}
	if err != nil {
		s.log.Debug("subagent frame not sent", "session_id", id, "err", err)
	}
}

// sendSubagentUpdate sends u on the child's immediate parent.
func (s *Server) sendSubagentUpdate(parent string, u SubagentUpdate) {
	p, err := u.Update()
	s.sendUpdateOn(parent, p, err)
}

// childCapabilities are the mutations a client may make on a child of
// delegation mode mode: a continuable (background) child's turn can be
// cancelled by its id; a one-shot child stops with its parent's turn.
func childCapabilities(mode string) *SubagentSessionCapabilities {
	if mode == delegation.ModeContinuable {
		return &SubagentSessionCapabilities{Cancel: &struct{}{}}
	}
	return &SubagentSessionCapabilities{}
}

// descriptionRunes bounds an announced description (the child's task).
const descriptionRunes = 1000

// announcement is the subagent_update announcing child in state st; its
// parent works in parentCwd.
func (s *Server) announcement(child *childtree.Child, parentCwd string, st *StateUpdate) SubagentUpdate {
	l := child.Link()
	u := SubagentUpdate{
		SessionID:    child.ID,
		Title:        l.Name,
		Description:  clip(l.Task, descriptionRunes),
		Capabilities: childCapabilities(l.Mode),
		State:        st,
	}
	if u.Title == "" {
		u.Title = "subagent"
	}
	// Set only when it differs from its parent's (a worktree): unset
	// means it inherits the parent's.
	if child.Cwd != "" && child.Cwd != parentCwd {
		u.Cwd = child.Cwd
	}
	link := map[string]any{"parentSessionId": child.Parent, "depth": child.Depth}
	if l.ToolCallID != "" {
		link["toolCallId"] = l.ToolCallID
	}
	if l.Mode != "" {
		link["mode"] = l.Mode
	}
	u.Meta = map[string]any{MetaChildStream: link}
	return u
}

// sessionCwd is the cwd of session id as its header records, "" unknown.
func (s *Server) sessionCwd(id string) string {
	if s.opts.Sessions == nil {
		return ""
	}
	if sess, ok := s.opts.Sessions.Get(id); ok {
		return sess.Header().Cwd
	}
	return ""
}

func clip(text string, runes int) string {
	if utf8.RuneCountInString(text) <= runes {
		return text
	}
	r := []rune(text)
	return string(r[:runes-1]) + "…"
}

// announce sends the announcement of c's child (from its emitter, first).
func (s *Server) announce(c *childStream) {
	st := Running()
	c.v1.announced = true
	c.v1.last = st
	s.sendSubagentUpdate(c.child.Parent, s.announcement(c.child, c.parentCwd, st))
}

// childState sends st for c's child unless it is the state last sent.
func (s *Server) childState(c *childStream, st *StateUpdate) {
	if !c.v1.announced || sameState(c.v1.last, st) {
		return
	}
	c.v1.last = st
	s.sendSubagentUpdate(c.child.Parent, SubagentUpdate{SessionID: c.child.ID, State: st})
}

func sameState(a, b *StateUpdate) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// turnEndState is the idle state a turn's end leaves a child in.
func turnEndState(r *session.TurnEndReason) *StateUpdate {
	if r == nil {
		return Idle("", nil)
	}
	switch r.Kind {
	case session.TurnEndCompleted:
		return Idle(string(acpsdk.StopReasonEndTurn), nil)
	case session.TurnEndAborted:
		return Idle(string(acpsdk.StopReasonCancelled), nil)
	case session.TurnEndMaxTokens:
		return Idle(string(acpsdk.StopReasonMaxTokens), nil)
	case session.TurnEndMaxSteps:
		return Idle(string(acpsdk.StopReasonMaxTurnRequests), nil)
	case session.TurnEndBlocked:
		return Idle(string(acpsdk.StopReasonRefusal), nil)
	case session.TurnEndInterrupted:
		return IdleError(codeInternal, "the turn was interrupted: the agent process ended during it")
	}
	msg := "the turn failed"
	if r.Error != nil && r.Error.Message != "" {
		msg = r.Error.Message
	}
	return IdleError(codeInternal, msg)
}

// withUsage is st with the child's own usage when st is idle and the
// usage is known (Options.ChildUsage); st otherwise.
func (s *Server) withUsage(parent, child string, st *StateUpdate) *StateUpdate {
	if st == nil || st.State != StateIdle || s.opts.ChildUsage == nil {
		return st
	}
	u := s.opts.ChildUsage(context.Background(), parent, child)
	if u == nil {
		return st
	}
	out := *st
	out.Usage = u
	return &out
}

// codeInternal is JSON-RPC's internal error, the code of a failed child's
// idle state.
const codeInternal = -32603

// settledState is the idle state a settlement notice records: its stop.
func settledState(msg session.Message) *StateUpdate {
	switch msg.Source.Stop {
	case "", delegation.StopCompleted:
		return Idle(string(acpsdk.StopReasonEndTurn), nil)
	case delegation.StopAborted:
		return Idle(string(acpsdk.StopReasonCancelled), nil)
	case delegation.StopMaxTokens:
		return Idle(string(acpsdk.StopReasonMaxTokens), nil)
	case delegation.StopRefusal:
		return Idle(string(acpsdk.StopReasonRefusal), nil)
	case delegation.StopMaxTurns:
		return Idle(string(acpsdk.StopReasonMaxTurnRequests), nil)
	}
	return IdleError(codeInternal, "the subagent failed ("+msg.Source.Stop+"): "+clip(firstLine(session.JoinText(msg.Content, "\n")), 200))
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// messageID is the id of the message event seq of session id in that
// session's transcript: a UUID derived from both, so a replay or a second
// connection names it the same way.
func messageID(id string, seq int64) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "acp-agent:message:%s:%d", id, seq)).String()
}

// sendSessionMessage sends, on session on, message msg from sender to
// recipient: its upsert (participants), then one chunk per content block.
// meta is the notifications' _meta (nil: none).
func (s *Server) sendSessionMessage(on, sender, recipient string, seq int64, msg session.Message, meta map[string]any) {
	id := messageID(on, seq)
	m := SessionMessage{MessageID: id, SenderSessionID: sender, RecipientSessionID: recipient}
	p, err := m.Update()
	s.sendUpdateMeta(on, p, meta, err)
	for _, b := range msg.Content {
		cb, ok := contentBlock(b)
		if !ok {
			continue
		}
		p, err := SessionMessageChunk{MessageID: id, Content: cb}.Update()
		s.sendUpdateMeta(on, p, meta, err)
	}
}

// encodeChildV1 queues the v1 frames ev tells of c's child. It runs under
// the appending session's lock: it only queues.
func (s *Server) encodeChildV1(c *childStream, ev childtree.Event) {
	child := ev.Child
	switch ev.Kind {
	case childtree.KindUpdate:
		// The child's prompt and a parent's later send_message: a message
		// from the parent in the child's transcript.
		se := ev.Session
		if se.Type != session.TypeUserMessage {
			return
		}
		msg, err := session.DecodeData[session.Message](se)
		if err != nil || (msg.Source.Kind != session.SourceUser && msg.Source.Kind != session.SourceCoordinator) {
			return
		}
		s.queue(c, item{call: func() {
			s.childState(c, Running())
			s.sendSessionMessage(child.ID, child.Parent, child.ID, se.Seq, msg, c.meta())
		}})
	case childtree.KindState:
		var st *StateUpdate
		switch ev.State {
		case childtree.StateRunning:
			st = Running()
		case childtree.StateIdle:
			st = turnEndState(ev.Stop)
			stop := st
			s.queue(c, item{call: func() { s.childState(c, s.withUsage(child.Parent, child.ID, stop)) }})
			return
		case childtree.StateRequiresAction:
			st = RequiresAction()
		case childtree.StateSettled:
			if ev.Message == nil {
				return
			}
			st = settledState(ev.Message.Body)
			m := *ev.Message
			// The settlement comes back to the parent as a message of the
			// child's, then the child shows idle with how it ended.
			s.queue(c, item{call: func() {
				s.sendSessionMessage(m.Recipient, child.ID, m.Recipient, m.Event.Seq, m.Body, nil)
				s.childState(c, s.withUsage(child.Parent, child.ID, st))
			}})
			return
		default:
			return
		}
		s.queue(c, item{call: func() { s.childState(c, st) }})
	case childtree.KindMessage:
		if ev.Message == nil || ev.Message.Direction != childtree.FromChild {
			return // messages to the child come with its update (above)
		}
		m := *ev.Message
		s.queue(c, item{call: func() { s.sendSessionMessage(m.Recipient, child.ID, m.Recipient, m.Event.Seq, m.Body, nil) }})
	}
}

// announcedChild is the stream of child id when the client follows ACP v1
// subagent sessions and the child was announced to it; nil otherwise.
func (s *Server) announcedChild(id string) *childStream {
	if !s.subagentSessions() {
		return nil
	}
	s.children.mu.Lock()
	c := s.children.streams[id]
	s.children.mu.Unlock()
	if c == nil || !c.announcedFlag.Load() {
		return nil
	}
	return c
}

// askAsChild asks the client about a call of an announced child, on the
// child's own session: the child's stream has shown the call (everything
// queued before is sent first), the child shows requires_action while the
// question waits and running again once it is answered.
func (g *gate) askAsChild(ctx context.Context, c *childStream, req workspace.PermissionRequest) error {
	s := g.s
	s.queue(c, item{call: func() { s.childState(c, RequiresAction()) }})
	done := make(chan struct{})
	s.queue(c, item{barrier: done})
	select {
	case <-done:
	case <-ctx.Done():
		return cancelled(req, context.Cause(ctx))
	}
	resp, err := s.conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(c.child.ID),
		ToolCall:  g.toolCall(req),
		Options:   permissionOptions(req, alwaysRule(req) != "" && s.policyFor(g.root, g.rootCwd).CanSave()),
	})
	s.queue(c, item{call: func() { s.childState(c, Running()) }})
	return g.decide(ctx, req, resp, err)
}

// maxAnnounceDepth bounds the re-announced tree (children are limited to
// depth 3; this only guards a damaged tree against a cycle).
const maxAnnounceDepth = 8

// reannounceChildren queues on parent session b the announcement of each
// of its children, and of theirs on them, with the state each is in now:
// a session/load or session/resume shows the whole tree again (after a
// restart too). A child running in this process is running (or idle with
// its last turn's end); a settled one is idle with how it settled; one
// whose process is gone is idle with its last turn's end, or unknown when
// its log ends inside a turn. Nothing is sent without the capability or
// for a read-only view.
func (s *Server) reannounceChildren(ctx context.Context, b *bound) {
	if b == nil || b.readOnly || !s.subagentSessions() {
		return
	}
	rows, err := s.storedRows(ctx)
	if err != nil {
		s.log.Warn("children not announced again: the sessions could not be listed", "session_id", b.id, "err", err)
		return
	}
	byParent := map[string][]session.Header{}
	for _, r := range rows {
		h := r.Header
		if h.Origin == session.OriginSubagent && h.ParentSession != "" {
			byParent[h.ParentSession] = append(byParent[h.ParentSession], h)
		}
	}
	type frame struct {
		parent string
		u      SubagentUpdate
	}
	var frames []frame
	var walk func(parent, parentCwd string, parentEvents []session.Event, depth int)
	walk = func(parent, parentCwd string, parentEvents []session.Event, depth int) {
		kids := byParent[parent]
		if depth > maxAnnounceDepth || len(kids) == 0 {
			return
		}
		slices.SortFunc(kids, func(a, b session.Header) int {
			return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		settled := settlements(parentEvents)
		for _, h := range kids {
			events, live := s.childEvents(ctx, h.ID)
			child := &childtree.Child{ID: h.ID, Parent: parent, Depth: h.DelegationDepth, Cwd: h.Cwd}
			child = childFromLog(child, events)
			st := s.withUsage(parent, h.ID, s.currentState(h.ID, events, live, settled))
			frames = append(frames, frame{parent, s.announcement(child, parentCwd, st)})
			walk(h.ID, h.Cwd, events, depth+1)
		}
	}
	parentEvents, _ := s.childEvents(ctx, b.id)
	walk(b.id, s.sessionCwd(b.id), parentEvents, 1)
	if len(frames) == 0 {
		return
	}
	b.em.push(item{call: func() {
		for _, f := range frames {
			s.sendSubagentUpdate(f.parent, f.u)
		}
	}})
}

// childEvents reads session id's log: from this process when it is live
// here (live), else from storage. A log that cannot be read is empty.
func (s *Server) childEvents(ctx context.Context, id string) (events []session.Event, live bool) {
	if s.opts.Sessions != nil {
		if sess, ok := s.opts.Sessions.Get(id); ok {
			evs, err := sess.Events()
			if err == nil {
				return evs, true
			}
		}
	}
	if s.opts.Stored != nil {
		if _, evs, err := s.opts.Stored.Inspect(ctx, id); err == nil {
			return evs, false
		}
	}
	return nil, false
}

// settlements maps each child that settled, per the parent's log, to the
// last settlement notice.
func settlements(events []session.Event) map[string]session.Message {
	out := map[string]session.Message{}
	for _, ev := range events {
		if ev.Type != session.TypeUserMessage {
			continue
		}
		msg, err := session.DecodeData[session.Message](ev)
		if err != nil || msg.Source.Kind != session.SourceSubagentSettled || msg.Source.SenderSessionID == "" {
			continue
		}
		out[msg.Source.SenderSessionID] = msg
	}
	return out
}

// childFromLog fills child's link from its log (descriptor, first prompt)
// as childtree would.
func childFromLog(child *childtree.Child, events []session.Event) *childtree.Child {
	return childtree.Restore(child, events)
}

// currentState is the state of child id now: see reannounceChildren.
func (s *Server) currentState(id string, events []session.Event, live bool, settled map[string]session.Message) *StateUpdate {
	open := session.OpenTurn(events)
	if live && open {
		return Running()
	}
	var last *session.TurnEndReason
	lastSeq := int64(-1)
	for _, ev := range events {
		switch ev.Type {
		case session.TypeTurnEnd:
			if d, err := session.DecodeData[session.TurnEndData](ev); err == nil {
				r := d.Reason
				last, lastSeq = &r, ev.Seq
			}
		case session.TypeTurnStart:
			last, lastSeq = nil, ev.Seq
		}
	}
	if msg, ok := settled[id]; ok && !open {
		return settledState(msg)
	}
	switch {
	case open:
		// Its process is gone mid-turn: nothing says how it ends.
		return Unknown()
	case last != nil:
		return turnEndState(last)
	case lastSeq < 0 && live:
		return Idle("", nil)
	}
	return Unknown()
}

// liveChild reports whether id is a subagent session this process runs,
// and its parent.
func (s *Server) liveChild(id string) (parent string, ok bool) {
	if s.opts.Sessions == nil {
		return "", false
	}
	sess, found := s.opts.Sessions.Get(id)
	if !found || sess.Header().Origin != session.OriginSubagent {
		return "", false
	}
	return sess.Header().ParentSession, true
}

// errChildRequest refuses a request naming child session id that it does
// not permit (-32602, READ_ONLY_SESSION): a child takes only
// session/cancel, where its capabilities say so, and can be viewed with
// session/load.
func errChildRequest(id, parent string) error {
	return errorf(CodeReadOnlySession, "session %s is a subagent session of %s: its parent runs it, so the only request it takes "+
		"is session/cancel (when its capabilities include cancel); view it with session/load, message it from its parent", id, parent)
}
