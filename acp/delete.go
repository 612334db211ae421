package acp

// This file defines session/delete: a top-level session's log is deleted
// with its subagent children's, child-first, once nothing runs in the tree
// and no other process holds any of it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Deleter is optionally implemented by a SessionStore; with it the server
// advertises and serves session/delete.
type Deleter interface {
	// HeldElsewhere reports whether another process holds session id for
	// writing.
	HeldElsewhere(id string) (bool, error)
	// Delete removes the stored logs of ids, in the order given, and
	// whatever is derived from them. A log held elsewhere fails with
	// ErrLocked and stops the deletion there; one already gone with
	// ErrNotFound.
	Delete(ctx context.Context, ids []string) error
}

// deleteSession serves session/delete.
func (s *Server) deleteSession(ctx context.Context, params json.RawMessage) (res any, err error) {
	defer s.recoverTo(MethodSessionDelete, &err)
	var p DeleteSessionRequest
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, toRequestError(errorf(CodeInvalidParams, "session/delete params: %v", err))
	}
	if err := session.ValidateID(p.SessionID); err != nil {
		return nil, toRequestError(&Error{Code: CodeInvalidSessionID, Message: fmt.Sprintf("invalid session id %q: %v", p.SessionID, err), Err: err})
	}
	d, ok := s.opts.Stored.(Deleter)
	if s.opts.Stored == nil || !ok {
		return nil, acpsdk.NewMethodNotFound(MethodSessionDelete)
	}
	if err := s.admitting(); err != nil {
		return nil, toRequestError(err)
	}
	// No session/load binds part of the tree while it is deleted.
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	if err := s.deleteTree(ctx, d, p.SessionID); err != nil {
		return nil, toRequestError(err)
	}
	s.log.Info("session deleted", "session_id", p.SessionID)
	return DeleteSessionResponse{}, nil
}

// deleteTree checks, releases and deletes session id and its descendants.
// Every refusal comes before anything is changed.
func (s *Server) deleteTree(ctx context.Context, d Deleter, id string) error {
	headers, err := s.knownHeaders(ctx)
	if err != nil {
		return err
	}
	h, ok := headers[id]
	if !ok {
		return &Error{Code: CodeUnknownSession, Message: "unknown session: " + id, Err: ErrNotFound}
	}
	if h.Origin == session.OriginSubagent {
		return errorf(CodeInvalidParams, "session %s is a subagent session of %s: delete its top-level session, which deletes its subagents with it", id, h.ParentSession)
	}
	tree := descendants(headers, id)
	if err := s.refuseRunning(tree); err != nil {
		return err
	}
	for _, x := range tree {
		if _, live := s.opts.Sessions.Get(x); live {
			continue // this process holds it: not held elsewhere
		}
		held, err := d.HeldElsewhere(x)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("probe session %s: %w", x, err)
		}
		if held {
			who := "it"
			if x != id {
				who = "its subagent " + x
			}
			return &Error{Code: CodeSessionLocked, Err: ErrLocked, Message: fmt.Sprintf(
				"session %s was not deleted: %s is open in another acp-agent process; close it there first", id, who)}
		}
	}
	// Nothing runs: let go of what this connection holds of the tree (its
	// release drains the idle subagents of a bound session).
	for _, x := range slices.Backward(tree) {
		s.mu.Lock()
		b, bound := s.sessions[x]
		if bound {
			delete(s.sessions, x)
		}
		s.mu.Unlock()
		if bound {
			if err := s.release(ctx, b); err != nil && !onlyWriteFailure(err) {
				return fmt.Errorf("release session %s before deleting it: %w", x, err)
			}
		}
	}
	for _, x := range tree {
		if _, live := s.opts.Sessions.Get(x); live {
			return errorf(CodeSessionBusy, "session %s was not deleted: session %s is still open in this process; try again when its work has settled", id, x)
		}
	}
	return d.Delete(ctx, tree)
}

// refuseRunning refuses a tree in which a session runs: a prompt in flight
// on this connection or an agent whose turn is running (an autonomous
// turn, a subagent's work).
func (s *Server) refuseRunning(tree []string) error {
	root := tree[len(tree)-1]
	for _, x := range tree {
		running := false
		if b := s.boundSession(x); b != nil {
			b.mu.Lock()
			running = b.cancel != nil
			b.mu.Unlock()
		}
		if s.opts.Agents != nil && !running {
			if ag, ok := s.opts.Agents.Get(x); ok && ag.Status() == agent.StatusRunning {
				running = !settlesSoon(ag)
			}
		}
		if !running {
			continue
		}
		if x == root {
			return errorf(CodeSessionBusy, "session %s was not deleted: it is running; cancel its prompt (session/cancel) or wait for it to end", root)
		}
		return errorf(CodeSessionBusy, "session %s was not deleted: its subagent %s is running; interrupt it or wait for it to settle", root, x)
	}
	return nil
}

// wrapUp bounds the wait for an agent that is running with no prompt in
// flight: a turn that was just cancelled (its response already sent)
// takes a moment to close, and a client's session/cancel followed by
// session/delete must not be refused for that moment.
const wrapUp = 2 * time.Second

// settlesSoon reports whether ag goes idle within wrapUp; an autonomous
// turn (a settlement notice's) runs longer and is refused.
func settlesSoon(ag *agent.Agent) bool {
	ctx, cancel := context.WithTimeout(context.Background(), wrapUp)
	defer cancel()
	return ag.WaitIdle(ctx) == nil
}

// knownHeaders are the headers of every stored or live session.
func (s *Server) knownHeaders(ctx context.Context) (map[string]session.Header, error) {
	rows, err := s.opts.Stored.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list stored sessions: %w", err)
	}
	out := make(map[string]session.Header, len(rows))
	for _, r := range rows {
		out[r.Header.ID] = r.Header
	}
	for _, sess := range s.opts.Sessions.List() {
		out[sess.ID()] = sess.Header()
	}
	return out, nil
}

// descendants returns root's subtree, deepest first, root last.
func descendants(headers map[string]session.Header, root string) []string {
	kids := map[string][]string{}
	for id, h := range headers {
		if h.ParentSession != "" && h.Origin == session.OriginSubagent {
			kids[h.ParentSession] = append(kids[h.ParentSession], id)
		}
	}
	var out []string
	seen := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		if seen[id] {
			return // a corrupt parent chain must not loop
		}
		seen[id] = true
		ks := kids[id]
		slices.Sort(ks)
		for _, k := range ks {
			walk(k)
		}
		out = append(out, id)
	}
	walk(root)
	return out
}
