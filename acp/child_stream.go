package acp

// This file streams descendants' own session/update traffic to a client
// that asked for it in initialize (clientCapabilities._meta["acp-agent"]
// {"subagentUpdates": true}): every update of a child of a session bound
// here (and of its children, down the tree) is sent under the child's own
// sessionId, from its start to its settlement, with _meta linking it to
// its parent session and delegation tool call and the ACP subagents RFD's
// fields. Without the announcement nothing is sent under a child's id.

import (
	"context"
	"encoding/json"
	"maps"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// CapSubagentUpdates is the key of clientCapabilities._meta["acp-agent"]
// by which a client asks for its sessions' descendants' own streams.
const CapSubagentUpdates = "subagentUpdates"

// MetaChildStream is the _meta key of a streamed child's notifications:
// {"parentSessionId", "toolCallId", "name", "task", "capabilities":
// {"cancel", "close"}}.
const MetaChildStream = delegation.MetaKey

// childStreams holds the streams of the descendants being followed. Its
// observer runs under each session's append lock: it only queues.
type childStreams struct {
	mu        sync.Mutex
	streams   map[string]*childStream
	unobserve func()
}

// childStream is one followed child: its emitter and its link.
type childStream struct {
	em *emitter
	// resumed is set once its emitter drains (observer callbacks of one
	// session are serialized, so it needs no lock).
	resumed bool

	mu   sync.Mutex
	link map[string]any
}

// linked reports whether the link names the child's delegation call.
func (c *childStream) linked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.link["toolCallId"]
	return ok
}

func (c *childStream) meta() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]any{MetaChildStream: maps.Clone(c.link)}
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
	if s.children.unobserve != nil {
		return
	}
	s.children.streams = map[string]*childStream{}
	s.children.unobserve = s.opts.Sessions.Observe(&session.Observer{
		Created: func(sess *session.Session, _ bool) { s.openChildStream(sess) },
		Appended: func(sess *session.Session, ev session.Event) {
			s.children.mu.Lock()
			c := s.children.streams[sess.ID()]
			s.children.mu.Unlock()
			if c == nil {
				return
			}
			c.note(ev)
			c.em.push(item{update: &agent.Update{Event: &ev}})
			// Sent once its descriptor is seen (or, without one, once its
			// turn ends: a child from before descriptors named the call).
			if !c.resumed && (c.linked() || ev.Type == session.TypeTurnEnd) {
				c.resumed = true
				c.em.resume()
			}
		},
		Removed: func(sess *session.Session) {
			s.children.mu.Lock()
			delete(s.children.streams, sess.ID())
			s.children.mu.Unlock()
		},
	})
}

// stopFollowingChildren ends the observer; queued updates still drain
// (the emitters' tracker waits for them).
func (s *Server) stopFollowingChildren() {
	s.children.mu.Lock()
	defer s.children.mu.Unlock()
	if s.children.unobserve != nil {
		s.children.unobserve()
		s.children.unobserve = func() {}
	}
	s.children.streams = nil
}

// openChildStream follows sess when it is a child of a session bound here
// or of a child already followed. It streams from the session's current
// length: a new child's seed (a fork's inherited history) and a resumed
// child's earlier turns were not part of this start.
func (s *Server) openChildStream(sess *session.Session) {
	h := sess.Header()
	if h.ParentSession == "" {
		return
	}
	s.mu.Lock()
	_, bound := s.sessions[h.ParentSession]
	s.mu.Unlock()
	s.children.mu.Lock()
	_, followed := s.children.streams[h.ParentSession]
	following := s.children.streams != nil
	s.children.mu.Unlock()
	if !following || (!bound && !followed) {
		return
	}
	// Read without the lock: a resumed child's log may come from its
	// file, and every session's appends pass through that lock.
	c := &childStream{link: childLink(sess)}
	tr := newTranslator(s.opts.Tools).withDepth(h.DelegationDepth)
	tr.cwd = h.Cwd
	tr.ctx.cfg = s.opts.Budget
	id := sess.ID()
	c.em = newEmitter(tr, func(ctx context.Context, u acpsdk.SessionUpdate) error {
		<-s.ready
		return s.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u, Meta: c.meta()})
	}, &s.emitters, s.log.With("session_id", id, "child_of", h.ParentSession))
	if d := s.opts.Durable; d != nil {
		c.em.durable = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	if d := s.opts.DurableText; d != nil {
		c.em.durableText = func(ctx context.Context, seq int64) error { return d(ctx, id, seq) }
	}
	c.em.skipTo(int64(sess.Len()))
	// Held until the link names the child's delegation: a one-shot
	// child's descriptor comes a few events into its first turn.
	if c.linked() {
		c.resumed = true
		c.em.resume()
	}
	s.children.mu.Lock()
	defer s.children.mu.Unlock()
	if s.children.streams != nil { // not stopped meanwhile
		s.children.streams[id] = c
	}
}

// childLink is the _meta of a child's streamed updates, from its header
// and what its log already holds (the descriptor of its creation seed; a
// resumed child's first prompt). A one-shot child's descriptor comes with
// its first turn: note picks it up then.
func childLink(sess *session.Session) map[string]any {
	link := map[string]any{
		"parentSessionId": sess.Header().ParentSession,
		// A child's turn can be cancelled by its id (session/cancel); it
		// is closed by its parent, not by the client.
		"capabilities": map[string]any{"cancel": true, "close": false},
	}
	events, err := sess.Events()
	if err != nil {
		return link
	}
	c := &childStream{link: link}
	for _, ev := range events {
		c.note(ev) // a resumed child's descriptor and first prompt
		if _, ok := link["task"]; ok && c.linked() {
			break
		}
	}
	return link
}

// linkDescriptor adds the name and delegation call a descriptor records.
func linkDescriptor(link map[string]any, ev session.Event) {
	var d struct {
		Label  string `json:"label"`
		CallID string `json:"callId"`
	}
	if json.Unmarshal(ev.Data, &d) != nil {
		return
	}
	if d.Label != "" {
		link["name"] = d.Label
	}
	if d.CallID != "" {
		link["toolCallId"] = d.CallID
	}
}

// note updates the link from the child's events: its descriptor, and its
// first prompt as its task.
func (c *childStream) note(ev session.Event) {
	switch ev.Type {
	case session.TypeDescriptor:
		c.mu.Lock()
		linkDescriptor(c.link, ev)
		c.mu.Unlock()
	case session.TypeUserMessage:
		msg, err := session.DecodeData[session.Message](ev)
		if err != nil || msg.Source.Kind != session.SourceUser {
			return
		}
		c.mu.Lock()
		if _, ok := c.link["task"]; !ok {
			c.link["task"] = session.JoinText(msg.Content, "\n")
		}
		c.mu.Unlock()
	}
}
