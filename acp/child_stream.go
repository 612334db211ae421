package acp

// This file encodes descendants' own session/update traffic for a client
// that asked for it in initialize (clientCapabilities._meta["acp-agent"]
// {"subagentUpdates": true}): what package subagent/childtree tells of
// each child of a session bound here (and of its children, down the tree)
// is sent under the child's own sessionId, from its start to its
// settlement, with _meta linking it to its parent session and delegation
// tool call and the ACP subagents RFD's fields. Without the announcement
// nothing is sent under a child's id. Which children are followed and when
// one counts as announced is childtree's; this file only encodes.

import (
	"context"
	"sync"
	"sync/atomic"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/childtree"
)

// CapSubagentUpdates is the key of clientCapabilities._meta["acp-agent"]
// by which a client asks for its sessions' descendants' own streams.
const CapSubagentUpdates = "subagentUpdates"

// MetaChildStream is the _meta key of a streamed child's notifications:
// {"parentSessionId", "toolCallId", "name", "task", "capabilities":
// {"cancel", "close"}}.
const MetaChildStream = delegation.MetaKey

// childStreams holds the streams of the descendants being followed. Its
// encode runs under each session's append lock: it only queues.
type childStreams struct {
	mu      sync.Mutex
	streams map[string]*childStream // nil before following and once stopped
	// gone holds the streams of children that left the store, for the
	// notices their parents record after (one per child).
	gone    map[string]*childStream
	watcher *childtree.Watcher
	stopped bool
}

// childStream is one followed child. Its updates are translated as its
// events are appended (under its append lock: childtree's events of one
// child come in its log's order) and queued, as item.call, on the emitter
// of its root session (the top-level session bound here that the tree
// hangs from): one queue for the whole tree, so the client sees the
// tree's sessions in the order their logs were written, a child's frames
// after the announcement that precedes them, and a scripted run's wire
// does not depend on goroutine scheduling. Until the child is announced
// its items wait in pending.
type childStream struct {
	child *childtree.Child
	root  string
	// parentCwd is the cwd of the child's parent when it was opened
	// (a one-shot parent may be gone when the child is announced).
	parentCwd string
	tr        *translator // only under the child's append lock
	// durable and durableText make the child's log durable through a seq
	// before a tool call or text of it is shown (Options.Durable).
	durable, durableText func(ctx context.Context, seq int64) error

	// announcedFlag is set once childtree announced the child.
	announcedFlag atomic.Bool

	mu        sync.Mutex // guards announced, pending; held while queueing
	announced bool
	pending   []item

	// v1 is the ACP v1 subagent state of the child as sent; only the
	// root's emitter (item.call) touches it.
	v1 struct {
		announced bool
		last      *StateUpdate
	}
}

// queue puts it on the root's emitter, or holds it until the child is
// announced.
func (s *Server) queue(c *childStream, it item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.announced {
		c.pending = append(c.pending, it)
		return
	}
	s.pushRoot(c, it)
}

// releaseChild marks c announced and queues first (the announcement, if any)
// then what waited.
func (s *Server) releaseChild(c *childStream, first ...item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.announced {
		s.pushRoot(c, first...)
		return
	}
	c.announced = true
	s.pushRoot(c, append(first, c.pending...)...)
	c.pending = nil
}

// pushRoot queues items on the root session's emitter (c.mu held).
func (s *Server) pushRoot(c *childStream, items ...item) {
	b := s.boundSession(c.root)
	if b == nil || b.em == nil {
		return
	}
	for _, it := range items {
		b.em.push(it)
	}
}

// updateItem translates ev of c's child and returns the item that sends
// it (nil when it shows nothing), after making it durable as the
// emitter would (write-ahead).
func (s *Server) updateItem(c *childStream, ev session.Event) *item {
	us := c.tr.event(ev, false)
	raw := c.tr.ctx.takeRaw()
	if len(us) == 0 && len(raw) == 0 {
		return nil
	}
	id := c.child.ID
	return &item{call: func() {
		if len(us) > 0 && !c.isDurable(ev) {
			s.log.Error("child update not shown: its log record is not durable", "session_id", id, "type", ev.Type, "seq", ev.Seq)
			return
		}
		<-s.ready
		for _, u := range raw {
			s.sendUpdateMeta(id, u, c.meta(), nil)
		}
		for _, u := range us {
			if err := s.conn.SessionUpdate(context.Background(), acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u, Meta: c.meta()}); err != nil {
				s.log.Debug("child update not sent", "session_id", id, "err", err)
			}
		}
	}}
}

// isDurable waits until ev is durable where its update needs it to be.
func (c *childStream) isDurable(ev session.Event) bool {
	d := c.durable
	switch ev.Type {
	case session.TypeToolCall:
	case session.TypeAssistantChunk:
		if c.durableText != nil {
			d = c.durableText
		}
	default:
		return true
	}
	return d == nil || d(context.Background(), ev.Seq) == nil
}

// meta is the _meta of the child's notifications, from its link as known
// when each is sent (a one-shot child's link grows in its first turn).
func (c *childStream) meta() map[string]any {
	l := c.child.Link()
	link := map[string]any{
		"parentSessionId": l.ParentSession,
		// A child's turn can be cancelled by its id (session/cancel); it
		// is closed by its parent, not by the client.
		"capabilities": map[string]any{"cancel": true, "close": false},
	}
	if l.Name != "" {
		link["name"] = l.Name
	}
	if l.ToolCallID != "" {
		link["toolCallId"] = l.ToolCallID
	}
	if l.HasTask {
		link["task"] = l.Task
	}
	return map[string]any{MetaChildStream: link}
}

// wantsSubagentUpdates reports whether the client's initialize announced
// CapSubagentUpdates.
func wantsSubagentUpdates(caps acpsdk.ClientCapabilities) bool {
	ns, ok := caps.Meta[MetaNamespace].(map[string]any)
	if !ok {
		return false
	}
	on, _ := ns[CapSubagentUpdates].(bool)
	return on
}

// followChildren starts following descendants (once per connection; Close
// stops it). Without a session store it does nothing.
func (s *Server) followChildren() {
	if s.opts.Sessions == nil {
		return
	}
	s.children.mu.Lock()
	defer s.children.mu.Unlock()
	if s.children.watcher != nil || s.children.stopped {
		return
	}
	s.children.streams = map[string]*childStream{}
	s.children.gone = map[string]*childStream{}
	s.children.watcher = childtree.Follow(s.opts.Sessions, s.isBound, s.encodeChild)
}

// isBound reports whether session id is bound here.
func (s *Server) isBound(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	return ok
}

// stopFollowingChildren ends the following; queued updates still drain
// (the emitters' tracker waits for them).
func (s *Server) stopFollowingChildren() {
	s.children.mu.Lock()
	w := s.children.watcher
	s.children.stopped = true
	s.children.streams = nil
	s.children.gone = nil
	s.children.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}

// encodeChild queues what ev tells of a child for the client.
func (s *Server) encodeChild(ev childtree.Event) {
	if ev.Kind == childtree.KindOpened {
		s.openChildStream(ev.Child)
		return
	}
	s.children.mu.Lock()
	c := s.children.streams[ev.Child.ID]
	if c == nil && (ev.Kind == childtree.KindState || ev.Kind == childtree.KindMessage) {
		// A settlement or report recorded after the child left.
		c = s.children.gone[ev.Child.ID]
	}
	if ev.Kind == childtree.KindClosed {
		delete(s.children.streams, ev.Child.ID)
		if c != nil && s.children.gone != nil {
			s.children.gone[ev.Child.ID] = c
		}
	}
	s.children.mu.Unlock()
	if c == nil {
		return
	}
	v1 := s.subagentSessions()
	switch ev.Kind {
	case childtree.KindAnnounced:
		c.announcedFlag.Store(true)
		if v1 {
			s.releaseChild(c, item{call: func() { s.announce(c) }})
		} else {
			s.releaseChild(c)
		}
		return
	case childtree.KindUpdate:
		if it := s.updateItem(c, ev.Session); it != nil {
			s.queue(c, *it)
		}
	}
	// KindState and KindMessage are encoded for ACP v1 clients only: the
	// session updates carry the same facts.
	if v1 {
		s.encodeChildV1(c, ev)
	}
}

// openChildStream starts the emitter of a child, held until the child is
// announced, streaming from the child's start.
func (s *Server) openChildStream(child *childtree.Child) {
	root, parentCwd := child.Parent, ""
	s.children.mu.Lock()
	p := s.children.streams[child.Parent]
	if p != nil {
		root, parentCwd = p.root, p.child.Cwd
	}
	s.children.mu.Unlock()
	if p == nil {
		parentCwd = s.sessionCwd(child.Parent)
	}
	tr := newTranslator(s.opts.Tools).withDepth(child.Depth).withSession(child.ID)
	tr.cwd = child.Cwd
	tr.ctx.cfg = s.opts.Budget
	tr.next = child.Start
	c := &childStream{child: child, root: root, parentCwd: parentCwd, tr: tr}
	id := child.ID
	if d := s.opts.Durable; d != nil {
		c.durable = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	if d := s.opts.DurableText; d != nil {
		c.durableText = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	s.children.mu.Lock()
	defer s.children.mu.Unlock()
	if s.children.streams != nil { // not stopped meanwhile
		s.children.streams[id] = c
	}
}
