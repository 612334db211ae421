package acp

// This file defines session/fork (unstable in ACP): a new top-level
// session whose log starts with the source's completed turns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

var _ interface {
	UnstableForkSession(context.Context, acpsdk.UnstableForkSessionRequest) (acpsdk.UnstableForkSessionResponse, error)
} = (*Server)(nil)

// UnstableForkSession creates a new top-level session seeded with the
// source's events up to its last completed turn (a turn in flight is left
// out), in the request's cwd. The seed is the new log's prefix (header
// parentSession = the source, seedLength = its length, no subagent
// descriptor: an ordinary fork, listed like any top-level session), made
// durable before the answer. Nothing is replayed: the client may
// session/load the fork to see it. The source is not touched; a subagent
// session cannot be forked.
func (s *Server) UnstableForkSession(ctx context.Context, p acpsdk.UnstableForkSessionRequest) (resp acpsdk.UnstableForkSessionResponse, err error) {
	defer s.recoverTo("session/fork", &err)
	src := string(p.SessionId)
	if err := session.ValidateID(src); err != nil {
		return resp, toRequestError(&Error{Code: CodeInvalidSessionID, Message: fmt.Sprintf("invalid session id %q: %v", src, err), Err: err})
	}
	if err := checkCwd(p.Cwd); err != nil {
		return resp, toRequestError(err)
	}
	if err := checkNoDirectories(p.AdditionalDirectories); err != nil {
		return resp, toRequestError(err)
	}
	var servers []acpsdk.McpServer
	if err := convertJSON(p.McpServers, &servers); err != nil {
		return resp, toRequestError(errorf(CodeInvalidParams, "mcpServers: %v", err))
	}
	if err := s.admitting(); err != nil {
		return resp, toRequestError(err)
	}
	h, events, err := s.sourceEvents(ctx, src)
	if err != nil {
		return resp, toRequestError(err)
	}
	if h.Origin == session.OriginSubagent {
		return resp, toRequestError(errViewOnly(src))
	}
	seed := completedTurns(events)
	cwd := filepath.Clean(p.Cwd)
	set, notices := s.startMCP(ctx, cwd, servers)
	sess, err := s.opts.Sessions.Create(session.Header{Cwd: cwd, ParentSession: src, SeedLength: len(seed)}, session.CreateOptions{Seed: seed})
	if err != nil {
		_ = set.Close()
		return resp, toRequestError(fmt.Errorf("create the fork of session %s: %w", src, err))
	}
	if d := s.opts.Durable; d != nil && sess.Len() > 0 {
		if err := d(ctx, sess.ID(), int64(sess.Len()-1)); err != nil {
			_ = set.Close()
			_ = s.opts.Sessions.Remove(sess.ID())
			return resp, toRequestError(fmt.Errorf("store the fork of session %s: %w", src, err))
		}
	}
	b, err := s.attachNew(sess, true, false, set)
	if err != nil {
		_ = s.opts.Sessions.Remove(sess.ID())
		return resp, toRequestError(err)
	}
	s.afterResponse.add(b.id, func() { s.sessionReady(b, notices) })
	s.log.Info("session forked", "session_id", b.id, "source", src, "seed", len(seed))
	resp.SessionId = acpsdk.SessionId(b.id)
	resp.Modes = s.modeState(b)
	if err := convertJSON(s.configOptions(b), &resp.ConfigOptions); err != nil {
		return resp, toRequestError(err)
	}
	if err := convertJSON(s.legacyModels(b), &resp.Models); err != nil {
		return resp, toRequestError(err)
	}
	return resp, nil
}

// sourceEvents reads the log of session id: the live one when it is live
// (bound here or driven by a subagent runtime), else the stored one,
// read-only.
func (s *Server) sourceEvents(ctx context.Context, id string) (session.Header, []session.Event, error) {
	if sess, ok := s.opts.Sessions.Get(id); ok {
		events, err := sess.Events()
		return sess.Header(), events, err
	}
	if s.opts.Stored == nil {
		return session.Header{}, nil, errorf(CodeUnknownSession, "unknown session: %s", id)
	}
	h, events, err := s.opts.Stored.Inspect(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return h, nil, &Error{Code: CodeUnknownSession, Message: "unknown session: " + id, Err: err}
	}
	if err != nil {
		if damage := s.damageOf(ctx, id, err); damage != "" {
			return h, nil, errDamaged(id, damage, "forked (load it with session/load to view its valid part)")
		}
		return h, nil, fmt.Errorf("read session %s: %w", id, err)
	}
	return h, events, nil
}

// completedTurns returns the prefix of events that ends with the last
// turn/end (empty when no turn completed). Events after it belong to a
// turn in flight or to none yet.
func completedTurns(events []session.Event) []session.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeTurnEnd {
			return append([]session.Event(nil), events[:i+1]...)
		}
	}
	return nil
}

// convertJSON copies src into dst through JSON: the unstable fork types
// duplicate stable ones field for field.
func convertJSON(src, dst any) error {
	b, err := json.Marshal(src)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
