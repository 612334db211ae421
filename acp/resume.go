package acp

// This file defines session/resume (reattach to a session without
// replaying it).

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
)

// ResumeSession reattaches a top-level session to this connection like
// session/load, but sends none of its history: the client already shows
// it. A live session keeps its agent; a stored one is restored from its
// log. A subagent (child) session can only be viewed (session/load) and is
// refused.
func (s *Server) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (resp acpsdk.ResumeSessionResponse, err error) {
	return s.resumeSession(ctx, p, nil)
}

// resumeSession is session/resume with the client's system prompt (nil:
// keep the recorded one).
func (s *Server) resumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest, client *string) (resp acpsdk.ResumeSessionResponse, err error) {
	defer s.recoverTo("session/resume", &err)
	id := string(p.SessionId)
	dirs, err := checkStoredBind(id, p.Cwd, true, p.AdditionalDirectories)
	if err != nil {
		return resp, toRequestError(err)
	}
	if err := s.admitting(); err != nil {
		return resp, toRequestError(err)
	}
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	b, notices, err := s.loadLocked(ctx, id, p.Cwd, p.McpServers, binding{dirs: dirs, client: client}, false)
	if err != nil {
		return resp, toRequestError(err)
	}
	if err := s.setRoots(ctx, b, dirs); err != nil {
		return resp, toRequestError(err)
	}
	resp.Modes = s.modeState(b)
	resp.ConfigOptions = s.configOptions(b)
	resp.Models = s.legacyModels(b)
	s.evictLoaded(b)
	s.readyStored(b, notices)
	s.reannounceChildren(ctx, b)
	if err := s.flush(ctx, b); err != nil {
		return resp, toRequestError(err)
	}
	s.log.Info("session resumed", "session_id", id)
	return resp, nil
}

// errViewOnly refuses to resume or fork a subagent session.
func errViewOnly(id string) error {
	return errorf(CodeReadOnlySession, "session %s is a subagent session: load it with session/load to view it", id)
}
