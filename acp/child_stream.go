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

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
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
	watcher *childtree.Watcher
	stopped bool
}

// childStream is one followed child's emitter.
type childStream struct {
	em    *emitter
	child *childtree.Child
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
	if ev.Kind == childtree.KindClosed {
		delete(s.children.streams, ev.Child.ID)
	}
	s.children.mu.Unlock()
	if c == nil {
		return
	}
	switch ev.Kind {
	case childtree.KindAnnounced:
		c.em.resume()
	case childtree.KindUpdate:
		se := ev.Session
		c.em.push(item{update: &agent.Update{Event: &se}})
	}
	// KindState and KindMessage have no encoding on this wire: the
	// session updates carry the same facts.
}

// openChildStream starts the emitter of a child, held until the child is
// announced, streaming from the child's start.
func (s *Server) openChildStream(child *childtree.Child) {
	c := &childStream{child: child}
	tr := newTranslator(s.opts.Tools).withDepth(child.Depth)
	tr.cwd = child.Cwd
	tr.ctx.cfg = s.opts.Budget
	id := child.ID
	c.em = newEmitter(tr, func(ctx context.Context, u acpsdk.SessionUpdate) error {
		<-s.ready
		return s.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u, Meta: c.meta()})
	}, &s.emitters, s.log.With("session_id", id, "child_of", child.Parent))
	if d := s.opts.Durable; d != nil {
		c.em.durable = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	if d := s.opts.DurableText; d != nil {
		c.em.durableText = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	c.em.skipTo(child.Start)
	s.children.mu.Lock()
	defer s.children.mu.Unlock()
	if s.children.streams != nil { // not stopped meanwhile
		s.children.streams[id] = c
	}
}
