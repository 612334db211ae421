package acp

// This file defines what a client can do with a child (subagent)
// session's own id: session/load views it (its transcript replayed
// read-only, then a notice saying so), session/cancel interrupts its
// current turn as the interrupt_agent tool does (with the user's
// authority over its direct parent, Options.InterruptChild), and
// session/list lists a parent's children through the
// _meta["acp-agent/parentSession"] filter (list.go). A child stays owned
// by its parent: it is never prompted or resumed directly.

import (
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/acp-agent/acp-agent/agent/session"
)

// MetaParentSession is the session/list _meta key of a child's direct
// parent: set on each listed row that has one, and, in a request, the
// filter that lists exactly that parent's subagent children.
const MetaParentSession = MetaNamespace + "/parentSession"

// MetaReadOnly is the _meta key of the notice that ends the replay of a
// child session: {parentSessionId}.
const MetaReadOnly = MetaNamespace + "/readOnly"

// markChild records that read-only view b is child session of parent.
func (s *Server) markChild(b *bound, parent string) {
	if b == nil {
		return
	}
	s.mu.Lock()
	b.childOf = parent
	s.mu.Unlock()
}

// childParent returns the parent of b when b is a child's read-only view,
// else "".
func (s *Server) childParent(b *bound) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return b.childOf
}

// noticeChildView queues, after a child's replay, the notice that it is
// read-only: who owns it and what the client can still do.
func (s *Server) noticeChildView(b *bound) {
	parent := s.childParent(b)
	if parent == "" {
		return
	}
	u := acpsdk.UpdateAgentMessageText(fmt.Sprintf("This is a subagent session, shown read-only: its parent session %s "+
		"owns it and runs it in its process, so it takes no prompts of its own. Message it from the parent "+
		"(its send_message tool); cancelling here interrupts its current turn.", parent))
	u.AgentMessageChunk.Meta = map[string]any{MetaReadOnly: map[string]any{"parentSessionId": parent}}
	// Its own message, not glued to the child's last answer: a messageId
	// of its own (a UUID, as ACP asks; derived from the child's id so a
	// replay is the same each time).
	mid := uuid.NewSHA1(uuid.NameSpaceURL, []byte("acp-agent:read-only-notice:"+b.id)).String()
	u.AgentMessageChunk.MessageId = &mid
	b.em.push(item{direct: []acpsdk.SessionUpdate{u}})
}

// errChildPrompt refuses a prompt to child session id, owned by parent.
func errChildPrompt(id, parent string) error {
	if parent == "" {
		return errorf(CodeReadOnlySession, "session %s is a subagent session: it can be loaded for viewing but not prompted", id)
	}
	return errorf(CodeReadOnlySession, "session %s is a subagent session of %s, read-only while its parent owns it: "+
		"message it from the parent session (send_message), not with session/prompt", id, parent)
}

// cancelChild interrupts the current turn of child session id, if id is
// a child live in this process, with the user's authority over its
// direct parent (as interrupt_agent does). A settled, one-shot or unknown
// id is a no-op; a refusal is logged (a notification has no answer).
// It does not block: it runs on the SDK's notification goroutine.
func (s *Server) cancelChild(id string) {
	if s.opts.InterruptChild == nil {
		return
	}
	sess, ok := s.opts.Sessions.Get(id)
	if !ok {
		return
	}
	h := sess.Header()
	if h.Origin != session.OriginSubagent {
		return
	}
	if err := s.opts.InterruptChild(id, h.ParentSession); err != nil {
		s.log.Warn("session/cancel of a subagent session refused", "session_id", id, "parent_session_id", h.ParentSession, "err", err)
		return
	}
	s.log.Info("subagent session interrupted by session/cancel", "session_id", id, "parent_session_id", h.ParentSession)
}
