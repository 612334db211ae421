package acp

// This file defines the session-level request handlers: initialize,
// session/new, session/load, session/close, session/cancel, the
// unsupported methods and extension dispatch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	mcptool "github.com/acp-agent/acp-agent/agent/tool/mcp"
)

// Initialize answers with protocol version 1 and our honest capabilities,
// and keeps the client's capabilities for later gating.
func (s *Server) Initialize(ctx context.Context, p acpsdk.InitializeRequest) (resp acpsdk.InitializeResponse, err error) {
	defer s.recoverTo("initialize", &err)
	s.mu.Lock()
	s.clientCaps = p.ClientCapabilities
	s.mu.Unlock()
	// ACP v1 subagent sessions (clientCapabilities.subagents, which the
	// wire counter read from this request's line), or the older private
	// _meta["acp-agent"].subagentUpdates, an alias of it.
	if s.subagentSessions() {
		s.followChildren()
	}
	caps := acpsdk.AgentCapabilities{
		LoadSession:        true,
		PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true, Image: s.opts.Images},
		McpCapabilities:    mcpCapabilities,
		SessionCapabilities: acpsdk.SessionCapabilities{
			List:   &acpsdk.SessionListCapabilities{},
			Close:  &acpsdk.SessionCloseCapabilities{},
			Resume: &acpsdk.SessionResumeCapabilities{},
			Fork:   &acpsdk.SessionForkCapabilities{},
			// Extra workspace roots (directories.go).
			AdditionalDirectories: &acpsdk.SessionAdditionalDirectoriesCapabilities{},
		},
	}
	if ext := s.advertisedExtensions(); len(ext) > 0 {
		caps.Meta = map[string]any{MetaNamespace: ext}
	}
	return acpsdk.InitializeResponse{
		ProtocolVersion:   acpsdk.ProtocolVersionNumber,
		AgentInfo:         &acpsdk.Implementation{Name: AgentName, Version: s.opts.Version},
		AgentCapabilities: caps,
		AuthMethods:       s.authMethods(),
	}, nil
}

// advertisedExtensions lists "_acp-agent/X" handlers as {"X": true}.
func (s *Server) advertisedExtensions() map[string]any {
	out := map[string]any{}
	prefix := "_" + MetaNamespace + "/"
	for name := range s.opts.Extensions {
		if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
			out[rest] = true
		}
	}
	return out
}

// ClientCapabilities returns what the client announced in initialize.
func (s *Server) ClientCapabilities() acpsdk.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientCaps
}

// NewSession creates a top-level session in an absolute cwd and starts its
// MCP servers (mcp.go); servers that fail are reported to the user once
// the response is out, with the available commands.
func (s *Server) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (resp acpsdk.NewSessionResponse, err error) {
	return s.newSession(ctx, p, nil)
}

// newSession is session/new with the client's system prompt (nil: none).
func (s *Server) newSession(ctx context.Context, p acpsdk.NewSessionRequest, client *string) (resp acpsdk.NewSessionResponse, err error) {
	defer s.recoverTo("session/new", &err)
	if err := checkCwd(p.Cwd); err != nil {
		return resp, toRequestError(err)
	}
	dirs, err := cleanDirectories(p.AdditionalDirectories)
	if err != nil {
		return resp, toRequestError(err)
	}
	if err := s.admitting(); err != nil {
		return resp, toRequestError(err)
	}
	set, notices := s.startMCP(ctx, filepath.Clean(p.Cwd), p.McpServers)
	sess, err := s.opts.Sessions.Create(session.Header{Cwd: filepath.Clean(p.Cwd), AdditionalDirectories: session.NewDirs(dirs)}, session.CreateOptions{})
	if err != nil {
		_ = set.Close()
		return resp, toRequestError(fmt.Errorf("create session: %w", err))
	}
	if err := s.recordBinding(ctx, sess, binding{client: client}); err != nil {
		_ = set.Close()
		_ = s.opts.Sessions.Remove(sess.ID())
		return resp, toRequestError(err)
	}
	b, err := s.attachNew(sess, true, false, set)
	if err != nil {
		_ = s.opts.Sessions.Remove(sess.ID())
		return resp, toRequestError(err)
	}
	notices = append(notices, s.settingsNotices(b.id, sess.Header().Cwd)...)
	s.afterResponse.add(b.id, func() { s.sessionReady(b, notices) })
	s.log.Info("session created", "session_id", b.id)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(b.id), Modes: s.modeState(b), ConfigOptions: s.configOptions(b), Models: s.legacyModels(b)}, nil
}

// attachNew builds the agent of a live session and binds both. ownSession
// says whether the server made the session live (and removes it on close).
// The bound session owns set (its MCP servers), also when binding fails.
func (s *Server) attachNew(sess *session.Session, ownSession, replay bool, set *mcptool.Set) (*bound, error) {
	ag, err := s.newAgent(sess, set)
	if err != nil {
		_ = set.Close()
		return nil, fmt.Errorf("create agent for session %s: %w", sess.ID(), err)
	}
	if s.opts.Agents != nil {
		if err := s.opts.Agents.Register(ag); err != nil {
			_ = ag.Close(context.Background())
			_ = set.Close()
			return nil, fmt.Errorf("register agent of session %s: %w", sess.ID(), err)
		}
	}
	b, err := s.bindAgent(sess, ag, true, ownSession, replay)
	if err != nil {
		_ = ag.Close(context.Background())
		if s.opts.Agents != nil {
			s.opts.Agents.Unregister(ag)
		}
		_ = set.Close()
		return nil, err
	}
	b.mcp = set
	return b, nil
}

// LoadSession replays a session's conversation as session/update
// notifications and answers after the last one was sent. A top-level
// session becomes live on this connection (prompts continue it); a child
// (subagent) session is replayed read-only, followed by a notice saying so.
func (s *Server) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (resp acpsdk.LoadSessionResponse, err error) {
	return s.loadSession(ctx, p, nil)
}

// loadSession is session/load with the client's system prompt (nil: keep
// the recorded one).
func (s *Server) loadSession(ctx context.Context, p acpsdk.LoadSessionRequest, client *string) (resp acpsdk.LoadSessionResponse, err error) {
	defer s.recoverTo("session/load", &err)
	id := string(p.SessionId)
	dirs, err := checkStoredBind(id, p.Cwd, p.Cwd != "", p.AdditionalDirectories)
	if err != nil {
		return resp, toRequestError(err)
	}
	if err := s.admitting(); err != nil {
		return resp, toRequestError(err)
	}
	s.bindMu.Lock()
	defer s.bindMu.Unlock()
	wasBound := s.boundSession(id) != nil
	b, notices, err := s.loadLocked(ctx, id, p.Cwd, p.McpServers, binding{dirs: dirs, client: client}, true)
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
	s.noticeChildView(b)
	s.reannounceChildren(ctx, b)
	// The replay is on the wire before the response (ACP).
	if err := s.flush(ctx, b); err != nil {
		if !wasBound && errors.Is(err, context.Canceled) {
			// $/cancel_request: the load did not happen.
			s.unbindFailed(ctx, b)
		}
		return resp, toRequestError(err)
	}
	if rerr := b.em.takeReplayErr(); rerr != nil {
		return resp, toRequestError(s.failedReplay(ctx, b, wasBound, rerr))
	}
	return resp, nil
}

// failedReplay is the answer of a session/load whose replay was cut short
// because the session's history could not be read back from its log: an
// error with the cause, never success with a partial or empty history. A
// session this load bound is released again (as session/close would), so
// the client does not hold a session it was told failed to load; one
// bound before stays as it was.
func (s *Server) failedReplay(ctx context.Context, b *bound, wasBound bool, cause error) error {
	if !wasBound {
		s.unbindFailed(ctx, b)
	}
	return &Error{Code: CodeReplayFailed, Err: cause, Message: fmt.Sprintf(
		"session %s was not loaded: its history could not be read back from its log: %v", b.id, cause)}
}

// unbindFailed releases b, bound by a session/load that then failed.
func (s *Server) unbindFailed(ctx context.Context, b *bound) {
	s.mu.Lock()
	if s.sessions[b.id] == b {
		delete(s.sessions, b.id)
	}
	s.mu.Unlock()
	if err := s.release(context.WithoutCancel(ctx), b); err != nil {
		s.log.Warn("release after a failed load", "session_id", b.id, "err", err)
	}
}

// evictLoaded lets a session bound from storage drop its loaded log from
// memory once everything that reads the whole log at binding (the replay
// queued with its own view, interrupted child asks, the mode and model
// choices) has read it: from here on the session keeps a recent tail and
// reads older events back from its file.
func (s *Server) evictLoaded(b *bound) {
	if b.sess == nil {
		return
	}
	before := b.sess.Resident()
	b.sess.Evict()
	// A large loaded log is garbage now: collect it before the replay
	// streams, or the collector, paced on the log's size, lets the
	// replay's garbage pile up on top of it first.
	if b.sess.Resident()-before > evictCollectEvents {
		runtime.GC()
	}
}

// evictCollectEvents is the number of evicted events past which a load
// collects at once (about 25 MB of a typical log).
const evictCollectEvents = 50_000

// checkStoredBind checks the params of a request binding stored session
// id (session/load, session/resume): a valid id, an absolute cwd where one
// is given or required, and additional directories that exist (returned
// cleaned).
func checkStoredBind(id, cwd string, checkCwdToo bool, dirs []string) ([]string, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, &Error{Code: CodeInvalidSessionID, Message: fmt.Sprintf("invalid session id %q: %v", id, err), Err: err}
	}
	if checkCwdToo {
		if err := checkCwd(cwd); err != nil {
			return nil, err
		}
	}
	return cleanDirectories(dirs)
}

// readyStored announces a stored session bound for writing (modes,
// commands, MCP and settings notices); a read-only view gets none.
func (s *Server) readyStored(b *bound, notices []acpsdk.SessionUpdate) {
	if !b.readOnly {
		s.sessionReady(b, append(notices, s.settingsNotices(b.id, b.sess.Header().Cwd)...))
	}
}

// loadLocked finds or restores session id and queues its replay. When it
// builds the session's agent, it starts the session's MCP servers first
// (in cwd, else the session's own cwd) and returns their failure notices.
// A session already bound or driven by a live agent keeps its tools.
// Without replay (session/resume) nothing of the log is sent, and a child
// (subagent) session, which can only be viewed, is refused.
func (s *Server) loadLocked(ctx context.Context, id, cwd string, servers []acpsdk.McpServer, bind binding, replay bool) (*bound, []acpsdk.SessionUpdate, error) {
	s.mu.Lock()
	b, ok := s.sessions[id]
	s.mu.Unlock()
	switch {
	case ok && !replay && b.damage != "":
		return nil, nil, errDamaged(id, b.damage, "resumed (load it with session/load to view its valid part)")
	case ok && !replay && b.readOnly:
		return nil, nil, errViewOnly(id)
	case ok && !replay:
		return b, nil, nil
	case ok:
		return b, nil, s.replayAgain(b)
	}
	startMCP := func(sess *session.Session) (*mcptool.Set, []acpsdk.SessionUpdate) {
		// The agent is built next: it starts from the roots named here
		// (directories.go; setRoots retries a failure after binding).
		if err := s.recordBinding(ctx, sess, bind); err != nil {
			s.log.Warn("record the additional directories", "session_id", sess.ID(), "err", err)
		}
		dir := cwd
		if dir == "" {
			dir = sess.Header().Cwd
		}
		return s.startMCP(ctx, filepath.Clean(dir), servers)
	}
	if sess, ok := s.opts.Sessions.Get(id); ok {
		return s.loadLive(ctx, sess, replay, startMCP)
	}
	return s.loadStored(ctx, id, replay, startMCP)
}

// mcpStarter starts the MCP servers of a session being bound.
type mcpStarter func(sess *session.Session) (*mcptool.Set, []acpsdk.SessionUpdate)

// loadLive binds sess, live in the session store (a child's read-only
// view, a session a live agent drives, or one with no agent yet).
func (s *Server) loadLive(ctx context.Context, sess *session.Session, replay bool, startMCP mcpStarter) (*bound, []acpsdk.SessionUpdate, error) {
	id := sess.ID()
	if sess.Header().Origin == session.OriginSubagent {
		if !replay {
			return nil, nil, errViewOnly(id)
		}
		events, err := sess.Events()
		if err != nil {
			return nil, nil, err
		}
		b, err := s.readOnly(id, sess.Header().DelegationDepth, events, "")
		s.markChild(b, sess.Header().ParentSession)
		return b, nil, err
	}
	if s.opts.Agents != nil {
		if ag, ok := s.opts.Agents.Get(id); ok {
			b, err := s.bindAgent(sess, ag, false, false, replay)
			b, err = s.settleDangling(ctx, b, err)
			return b, nil, err
		}
	}
	set, notices := startMCP(sess)
	b, err := s.attachNew(sess, false, replay, set)
	b, err = s.settleDangling(ctx, b, err)
	return b, notices, err
}

// loadStored restores session id from storage and binds it: a child's
// read-only view, the valid part of a damaged log, or the session itself.
func (s *Server) loadStored(ctx context.Context, id string, replay bool, startMCP mcpStarter) (*bound, []acpsdk.SessionUpdate, error) {
	if s.opts.Stored == nil {
		return nil, nil, errorf(CodeUnknownSession, "unknown session: %s", id)
	}
	var (
		h      session.Header
		events []session.Event
		err    error
	)
	if hr, ok := s.opts.Stored.(HeaderReader); ok {
		// The header says whether this is a child; a top-level log is then
		// read once, by Load, not also by Inspect.
		h, err = hr.Header(ctx, id)
	} else {
		h, events, err = s.opts.Stored.Inspect(ctx, id)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, nil, &Error{Code: CodeUnknownSession, Message: "unknown session: " + id, Err: err}
	}
	if err != nil {
		// Without a HeaderReader a damaged log fails here, top-level or not.
		if b, ok, verr := s.loadValidPart(ctx, id, err, replay); ok || verr != nil {
			return b, nil, verr
		}
		return nil, nil, fmt.Errorf("read session %s: %w", id, err)
	}
	if h.Origin == session.OriginSubagent {
		if !replay {
			return nil, nil, errViewOnly(id)
		}
		if events == nil {
			if h, events, err = s.opts.Stored.Inspect(ctx, id); err != nil {
				if b, ok, verr := s.loadValidPart(ctx, id, err, replay); ok || verr != nil {
					return b, nil, verr
				}
				return nil, nil, fmt.Errorf("read session %s: %w", id, err)
			}
		}
		b, err := s.readOnly(id, h.DelegationDepth, events, "", s.repairedNotice(id, events)...)
		s.markChild(b, h.ParentSession)
		return b, nil, err
	}
	h, events, err = s.opts.Stored.Load(ctx, id)
	if err != nil {
		if b, ok, verr := s.loadValidPart(ctx, id, err, replay); ok || verr != nil {
			return b, nil, verr
		}
		return nil, nil, fmt.Errorf("load session %s: %w", id, err)
	}
	s.killLeftovers(id, events)
	sess, err := s.opts.Sessions.Adopt(h, events)
	if err != nil {
		_ = s.opts.Stored.Release(id)
		return nil, nil, fmt.Errorf("restore session %s: %w", id, err)
	}
	set, notices := startMCP(sess)
	if replay {
		notices = append(s.repairedNotice(id, events), notices...)
	}
	b, err := s.attachNew(sess, true, replay, set)
	if err != nil {
		_ = s.opts.Sessions.Remove(id)
		return nil, nil, err
	}
	s.log.Info("session loaded", "session_id", id, "events", len(events), "replay", replay)
	b, err = s.settleDangling(ctx, b, nil)
	s.settleWorktrees(ctx, b, err, events)
	return b, notices, err
}

// settleWorktrees settles, through Options.SettleWorktrees, the worktrees
// of b's foreground children that a killed process left, and records
// each outcome in b's log durably: the emitter shows it, and a later
// load finds it and does nothing more. A failure to record is logged (the
// load itself succeeded; the next load settles again: the worktree is
// then gone or still changed).
func (s *Server) settleWorktrees(ctx context.Context, b *bound, err error, events []session.Event) {
	if err != nil || s.opts.SettleWorktrees == nil || b == nil || b.sess == nil || b.readOnly {
		return
	}
	for _, rec := range s.opts.SettleWorktrees(ctx, b.sess.Header(), events) {
		ev, aerr := b.sess.Append(delegation.TypeWorktreeSettled, rec, session.Ignorable())
		if aerr == nil {
			aerr = s.makeDurable(ctx, b.id, ev.Seq)
		}
		if aerr != nil {
			s.log.Warn("record a settled worktree of a child", "session_id", b.id, "child", rec.ChildSessionID, "err", aerr)
			return
		}
	}
}

// loadValidPart binds, read-only, the valid part of a session (top-level
// or child) whose log has a bad line in the middle (loadErr has code
// SESSION_CORRUPT), with a notice saying what is damaged and how to
// repair it; prompts and mode or model changes are then refused with
// SESSION_DAMAGED. Without replay (session/resume) nothing is bound and
// the resume is refused the same way. ok is false when it does not apply
// (another failure, or no ValidPartReader).
func (s *Server) loadValidPart(ctx context.Context, id string, loadErr error, replay bool) (*bound, bool, error) {
	h, events, damage, ok := s.validPart(ctx, id, loadErr)
	if !ok {
		return nil, false, nil
	}
	if !replay {
		return nil, true, errDamaged(id, damage, "resumed (load it with session/load to view its valid part)")
	}
	s.log.Warn("session log damaged: its valid part is shown read-only", "session_id", id, "damage", damage)
	notice := acpsdk.UpdateAgentMessageText(damagedNotice(id, damage, h.Origin == session.OriginSubagent))
	b, err := s.readOnly(id, h.DelegationDepth, events, damage, notice)
	if err != nil {
		return nil, true, err
	}
	return b, true, nil
}

// replayAgain replays an already bound session's log once more (a client
// may load a session it has open). The replay is folded by a fresh
// translator, so the live stream's state is untouched, and it is queued
// behind the live updates already pending.
func (s *Server) replayAgain(b *bound) error {
	it := item{replay: b.replayLog, again: true}
	if b.sess != nil {
		it = item{replayOf: b.sess, replayLen: int64(b.sess.Len()), again: true}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.sessions[b.id] != b {
		// Closed (or released) since it was looked up: no replay.
		return errorf(CodeShuttingDown, "the agent is shutting down")
	}
	b.em.push(it)
	if len(b.viewNotices) > 0 {
		b.em.push(item{direct: b.viewNotices})
	}
	return nil
}

// readOnly binds a session for viewing: a child, or the valid part of a
// damaged log (damage says what is damaged; "" for an intact child): its
// transcript is replayed, then the notices, if any, are sent; prompts are
// refused.
// Like bindAgent, it is refused after Close before any replay is queued.
func (s *Server) readOnly(id string, depth int, events []session.Event, damage string, notices ...acpsdk.SessionUpdate) (*bound, error) {
	b := &bound{id: id, readOnly: true, damage: damage, replayLog: events, viewNotices: notices}
	b.em = newEmitter(newTranslator(s.opts.Tools).withDepth(depth).withSession(id).withModels(s.opts.Models), s.sendTo(id), &s.emitters, s.log.With("session_id", id))
	b.em.sendText = s.sendTextTo(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(CodeShuttingDown, "the agent is shutting down")
	}
	s.sessions[id] = b
	b.em.push(item{replay: events})
	if len(notices) > 0 {
		b.em.push(item{direct: notices})
	}
	b.em.resume()
	return b, nil
}

// CloseSession cancels the session's work and releases it.
func (s *Server) CloseSession(ctx context.Context, p acpsdk.CloseSessionRequest) (resp acpsdk.CloseSessionResponse, err error) {
	defer s.recoverTo("session/close", &err)
	b, err := s.lookup(string(p.SessionId))
	if err != nil {
		return resp, toRequestError(err)
	}
	s.mu.Lock()
	if s.sessions[b.id] == b {
		delete(s.sessions, b.id)
	}
	s.mu.Unlock()
	if err := s.release(ctx, b); err != nil {
		// A session whose log can no longer be written (a full disk) is
		// closed all the same: its prompt already ended with that error
		// and nothing unsaved was shown, so the close itself succeeded.
		if !onlyWriteFailure(err) {
			return resp, toRequestError(err)
		}
		s.log.Warn("session closed with events not saved", "session_id", b.id, "err", err)
	}
	s.log.Info("session closed", "session_id", b.id)
	return resp, nil
}

// Cancel handles session/cancel. It runs on the SDK's notification
// goroutine and must not block: it only signals. The SDK has already
// cancelled the prompt's context; cancelling our own handle as well covers
// prompts whose SDK entry was replaced by an overlapping request. With no
// prompt in flight it stops autonomous work (for example a turn woken by a
// subagent's settlement notice). A child (subagent) session's id
// interrupts the child's current turn (cancelChild). Unknown sessions are
// ignored, as for any notification.
func (s *Server) Cancel(ctx context.Context, p acpsdk.CancelNotification) (err error) {
	defer s.recoverTo("session/cancel", &err)
	s.mu.Lock()
	b, ok := s.sessions[string(p.SessionId)]
	s.mu.Unlock()
	if !ok || b.readOnly {
		// A child's id (viewed or not): interrupt its turn.
		s.cancelChild(string(p.SessionId))
		return nil
	}
	if !b.cancelPrompt(errUserCancel, nil) {
		b.agent.Cancel(session.AbortReason{Kind: agent.AbortUser}, true)
	}
	return nil
}

var errUserCancel = errors.New("acp: cancelled by the client")

// SetSessionConfigOption switches a session's mode, or its model when the
// model picker is offered (config_options.go).
func (s *Server) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (resp acpsdk.SetSessionConfigOptionResponse, err error) {
	defer s.recoverTo("session/set_config_option", &err)
	return s.setConfigOption(ctx, p)
}

// HandleExtensionMethod dispatches "_..." methods to Options.Extensions.
func (s *Server) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (res any, err error) {
	defer s.recoverTo(method, &err)
	if res, ok, err := s.routed(ctx, method, params); ok {
		return res, toRequestError(err)
	}
	h, ok := s.opts.Extensions[method]
	if !ok {
		return nil, acpsdk.NewMethodNotFound(method)
	}
	res, err = h(ctx, params)
	return res, toRequestError(err)
}

// ExtensionNames returns the registered extension methods, sorted.
func (s *Server) ExtensionNames() []string {
	names := make([]string, 0, len(s.opts.Extensions))
	for n := range s.opts.Extensions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Server) admitting() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errorf(CodeShuttingDown, "the agent is shutting down")
	}
	return nil
}

func checkCwd(cwd string) error {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return errorf(CodeInvalidParams, "cwd must be an absolute path: %q", cwd)
	}
	return nil
}

// onlyWriteFailure reports whether err (a join) consists only of failures
// carrying the storage write code: the disk refused the session's last
// events, which close reports in the log, not as a failed close.
func onlyWriteFailure(err error) bool {
	if c, ok := err.(interface{ ErrorCode() string }); ok {
		return c.ErrorCode() == codeSessionWrite
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if !onlyWriteFailure(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return u.Unwrap() != nil && onlyWriteFailure(u.Unwrap())
	}
	return false
}

// codeSessionWrite is the storage's write-failure code
// (persistence.CodeWrite; acp does not import persistence).
const codeSessionWrite = "SESSION_WRITE_FAILED"
