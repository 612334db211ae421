package acp

// This file defines Server: construction, the connection lifecycle
// (Serve, Shutdown, Close) and the per-session table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings/rootpolicy"
	"github.com/acp-agent/acp-agent/agent/tool"
	mcptool "github.com/acp-agent/acp-agent/agent/tool/mcp"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// AgentName is the agentInfo.name the server announces.
const AgentName = "acp-agent"

// MetaNamespace is our key in agentCapabilities._meta and the prefix of
// our extension methods ("_acp-agent/...").
const MetaNamespace = "acp-agent"

// MetaIncludeChildren is the session/list _meta flag that also lists
// subagent (child) sessions.
const MetaIncludeChildren = "acp-agent/includeChildren"

// MetaDamage is the session/list _meta key of a listed session whose log
// is damaged or was repaired: what is wrong with it, worded as every
// command words it.
const MetaDamage = "acp-agent/damage"

// DefaultPageSize is the number of sessions per session/list page.
const DefaultPageSize = 50

// ExtensionFunc handles one extension method ("_acp-agent/..."). Its
// errors go through the same mapping as every other handler's.
type ExtensionFunc func(ctx context.Context, params json.RawMessage) (any, error)

// Options configure a Server. Sessions and NewAgent are required.
type Options struct {
	// Version is announced in agentInfo.version.
	Version string
	// Sessions is the live session store (with persistence attached).
	Sessions *session.Store
	// Stored is durable storage for session/list and session/load; nil
	// means sessions live only as long as the process.
	Stored SessionStore
	// Durable, when set, makes the log of session id durable through the
	// event seq; the server calls it before showing a tool call, so the
	// client never sees a call that a restart could forget. Nil means no
	// durable storage: updates are sent as they come.
	Durable func(ctx context.Context, id string, seq int64) error
	// DurableText, when set, is Durable for streamed text and thought
	// chunks: a group commit that shares one fsync among the chunks of a
	// short window (persistence.Store.SyncSoon). Nil uses Durable.
	DurableText func(ctx context.Context, id string, seq int64) error
	// Agents, when set, receives every agent the server creates, so other
	// components (the subagent runtime) find top-level agents by id.
	Agents *agent.Registry
	// NewAgent builds the agent of a top-level session (model, tools,
	// checkpointing). The server owns and closes what it returns.
	NewAgent func(s *session.Session) (*agent.Agent, error)
	// Tools looks tools up by name for their ACP kind and title; may be nil.
	Tools ToolLookup
	// Title returns a stored session's title for session/list; nil derives
	// it from the log (the latest session/title event).
	Title func(ctx context.Context, id string) (string, error)
	// BeforeRelease, when set, runs before a session's agent is closed by
	// session/close or shutdown (the subagent runtime drains the session's
	// descendants there, child-first).
	BeforeRelease func(ctx context.Context, a *agent.Agent) error
	// InterruptChild, when set, interrupts the current turn of live child
	// (subagent) session childID with the user's authority over its
	// direct parent parentSessionID, as the interrupt_agent tool does: a
	// session/cancel of a child's id calls it (child_session.go). It must
	// not block; a settled or one-shot child is a no-op.
	InterruptChild func(childID, parentSessionID string) error
	// CachedTitle, when set, is asked first for each listed row (only for
	// the rows of the page being answered); ok=false falls back to Title or
	// the log.
	CachedTitle func(r StoredSession) (title string, ok bool)
	// DescribeDamage, when set, words what is damaged in a stored
	// session's log the server read (err: the read's failure; else its
	// events, for a repaired log), "" for nothing. session/list shows it
	// as _meta["acp-agent/damage"], session/load of a repaired log as a
	// notice after the replay.
	DescribeDamage func(id string, events []session.Event, err error) string
	// Extensions maps extension method names ("_acp-agent/subagents/list")
	// to handlers. Each "_acp-agent/X" entry is advertised as
	// agentCapabilities._meta["acp-agent"]["X"] = true.
	Extensions map[string]ExtensionFunc
	// LocalFiles and LocalCommands serve the workspace tools when the
	// client does not advertise fs / terminal (see Env); nil leaves those
	// tools without local access.
	LocalFiles    workspace.Files
	LocalCommands workspace.Commands
	// SandboxCommands, when set, returns the local commands of a root
	// session whose settings (user file and project file merged, see
	// Settings) have sandbox section sb; it replaces LocalCommands, so a
	// project that turns the sandbox on gets sandboxed commands.
	SandboxCommands func(sb rootpolicy.Sandbox) workspace.Commands
	// UnsandboxedCommands are the local commands of a session whose
	// person turned the sandbox off (config_boolean.go); with
	// SandboxCommands it lets the "sandbox" boolean option be offered.
	UnsandboxedCommands workspace.Commands
	// KillLeftover, when set, kills the processes carrying any of the
	// markers (local.KillMarked) and returns how many: a session loaded
	// from storage kills what its last turn's commands left.
	KillLeftover func(markers ...string) int
	// SettleWorktrees, when set, settles the worktrees of foreground
	// children whose call a killed process left unfinished, below a root
	// session just loaded from storage (events: its log as loaded), and
	// returns what it did; each record is appended to the root's log
	// (delegation.TypeWorktreeSettled) and shown to the person.
	SettleWorktrees func(ctx context.Context, root session.Header, events []session.Event) []delegation.WorktreeSettled
	// ModelError, when non-nil, rejects every prompt with this error (for
	// example: no model configured). Sessions can still be created/loaded.
	ModelError error
	// Auth, when set, is the credentials state of the configured models:
	// its env_var methods are advertised in initialize, prompts of a model
	// without its key are refused with AUTH_REQUIRED (-32000), and
	// authenticate reads the environment again (auth.go).
	Auth Authenticator
	// MaxPromptBytes bounds a prompt's content; 0 means DefaultMaxPromptBytes.
	MaxPromptBytes int
	// Images advertises promptCapabilities.image (some configured model
	// takes images); ImageInput says whether session id's current model
	// does (nil: none does). A prompt with an image for a model without
	// image input is refused (content.go).
	Images     bool
	ImageInput func(sessionID string) bool
	// Thinking says whether session id's current model thinks and can be
	// asked not to (model.ThinkingSwitch); with it the "thinking" boolean
	// option is offered (config_thinking.go). nil: no model does.
	Thinking func(sessionID string) bool
	// MaxLinkedFileBytes bounds what a resource_link to a file adds to
	// the prompt; 0 means DefaultMaxLinkedFileBytes (links.go).
	MaxLinkedFileBytes int
	// PageSize is the session/list page size; 0 means DefaultPageSize.
	PageSize int
	Logger   *slog.Logger
	// PanicOnBug makes handler panics crash instead of being answered as
	// internal errors (tests turn it on so bugs fail loudly).
	PanicOnBug bool

	// NewAgentWithTools, when set, builds the agent of a top-level session
	// that has session tools (the tools of the MCP servers named in
	// session/new or session/load) on top of what NewAgent would offer.
	NewAgentWithTools func(s *session.Session, extra []tool.Tool) (*agent.Agent, error)
	// MCP configures how those servers are started (timeouts); see mcp.go.
	MCP mcptool.Options
	// Budget is the context policy: which window usage_update reports
	// (context.go). Its zero value reports only known models.
	Budget budget.Config
	// Settings loads the settings (permission rules, env, sandbox) in
	// force for a project directory; nil means no settings files. A root
	// session's policy is loaded once, when its gate first decides, and
	// its children follow it (agent/settings/rootpolicy).
	Settings rootpolicy.Loader
	// Protected are the agent's own files and directories (the user
	// settings file, the data directory): an effect on them asks in every
	// mode but bypass, wherever they lie.
	Protected policy.Protector
	// Environ is the environment commands start from; nil means
	// os.Environ. SecretEnv names variables always left out of it (the
	// provider's key variable).
	Environ   func() []string
	SecretEnv []string
	// RewriteSystemPrompt, when set, rewrites a recorded system prompt
	// for other additional workspace roots and another client system
	// prompt (agent/prompt.WithRoots, WithClient); changed is false when
	// the text has no section to rewrite. A load or resume that changes
	// either records the rewritten prompt (directories.go).
	RewriteSystemPrompt func(text string, roots []string, client string) (rewritten string, changed bool)
	// Commands are the slash commands offered to clients (commands.go).
	Commands []Command
	// Models are the models a session can be switched to, the default
	// first; with two or more the model picker is offered
	// (config_options.go).
	Models []ModelOption
	// Questions holds children's questions asked while no prompt of their
	// root runs, for a client without clientCapabilities.subagents, and
	// refuses those nobody answers in time (held_questions.go); nil: a
	// queue with DefaultQuestionTimeout and the wall clock. Share it with
	// SubagentsListExtension so the listings show held and refused
	// questions.
	Questions *HeldQuestions
	// ChildUsage, when set, is what child session childID (of parent
	// parentID) spent on its own, for the usage of its idle state
	// snapshots (subagent_sessions.go); nil when not known.
	ChildUsage func(ctx context.Context, parentID, childID string) *Usage
}

// Server is the ACP agent side: it implements acpsdk.Agent (plus
// AgentLoader and ExtensionMethodHandler) over the agent runtime. One Server
// serves one connection. It is safe for concurrent use: the SDK calls
// request handlers concurrently and notification handlers serially.
type Server struct {
	opts  Options
	log   *slog.Logger
	ready chan struct{} // closed once conn is set
	wire  *wireCounter

	conn *acpsdk.AgentSideConnection // set once by Serve before ready closes
	out  *countingWriter             // the connection's writer, set with conn

	bindMu sync.Mutex // serializes session/load so one id binds once

	mu         sync.Mutex // guards the fields below
	sessions   map[string]*bound
	clientCaps acpsdk.ClientCapabilities
	closing    bool // Shutdown began: no new prompts
	closed     bool // Close began: no new sessions
	served     bool

	gate        gateState  // modes and remembered permission decisions (modes.go)
	modelChoice modelState // each session's model (config_options.go)
	asks        childAsks  // children's permission requests in flight (child_permission.go)

	questionsOnce sync.Once
	held          *HeldQuestions // children's questions held for a prompt (held_questions.go)
	asking        askWatch       // held questions being asked again, until on the wire
	children      childStreams   // descendants' own streams, when asked (child_stream.go)

	raw rawCalls // requests to the client the SDK cannot express (rawcall.go)

	// rootsMu guards roots: each bound session's additional workspace
	// roots, read from its log once (directories.go).
	rootsMu sync.Mutex
	roots   map[string][]string
	// sandboxes are the sessions' recorded sandbox choices, also under
	// rootsMu (config_boolean.go).
	sandboxes map[string]bool

	policiesOnce sync.Once
	policies     *rootpolicy.Cache // each root session's settings (rootPolicies)

	prompts  tracker // running Prompt handlers
	emitters tracker // emitter drain goroutines

	afterResponse responseHooks // see respond.go

	// rejects queues the errors answering undecodable lines (wire.go) to
	// the goroutine Serve starts, so the SDK's reader never blocks on a
	// write; stopRejects (closed once by Close) ends that goroutine, which
	// is counted in emitters.
	rejects     chan int
	stopRejects chan struct{}
	stopOnce    sync.Once
}

// bound is a session attached to this connection.
type bound struct {
	id       string
	sess     *session.Session // nil for a read-only stored child
	agent    *agent.Agent     // nil when read-only
	readOnly bool
	// damage, for a session bound read-only because its log is damaged in
	// the middle (its valid part is shown), says what is damaged, as the
	// store words it; "" otherwise (readonly.go).
	damage string
	// childOf is the parent session of a child's read-only view ("" for
	// any other session), guarded by Server.mu (child_session.go).
	childOf string
	// replayLog is the transcript of a read-only session (no live log).
	replayLog []session.Event
	// viewNotices follow each replay of a read-only session (the damage
	// notice), also when it is loaded again.
	viewNotices []acpsdk.SessionUpdate
	em          *emitter
	unsub       func()
	// ownAgent/ownSession: the server created the agent / made the
	// session live, and so closes / removes it.
	ownAgent, ownSession bool
	// mcp is the session's MCP servers, stopped on release (mcp.go).
	mcp *mcptool.Set

	mu     sync.Mutex              // guards cancel
	cancel context.CancelCauseFunc // the in-flight prompt, if any
}

var (
	_ acpsdk.Agent                  = (*Server)(nil)
	_ acpsdk.AgentLoader            = (*Server)(nil)
	_ acpsdk.ExtensionMethodHandler = (*Server)(nil)
)

// New returns a Server. It starts no goroutines until Serve.
func New(opts Options) (*Server, error) {
	if opts.Sessions == nil || opts.NewAgent == nil {
		return nil, errors.New("acp: Options.Sessions and Options.NewAgent are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	return &Server{
		opts:        opts,
		log:         opts.Logger,
		ready:       make(chan struct{}),
		wire:        newWireCounter(),
		sessions:    make(map[string]*bound),
		rejects:     make(chan int, maxQueuedRejects),
		stopRejects: make(chan struct{}),
	}, nil
}

// Serve runs the ACP connection over in (client to agent) and out (agent
// to client) until the peer closes in or a write to out fails (it returns
// nil) or ctx is cancelled (it returns ErrServerClosed). Before returning
// it calls Shutdown, so no prompt is still running; the caller then lets
// other components drain and calls Close. Serve may be called once.
//
// A blocked read on in cannot be interrupted; when ctx ends first, the
// SDK's reader goroutine stays blocked until in is closed or the process
// exits (house-style Appendix A.3).
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return errors.New("acp: Serve called twice")
	}
	s.served = true
	s.mu.Unlock()

	// The reader holds the SDK's receive loop until the logger is set: the
	// SDK reads its logger field unsynchronized (a data race otherwise).
	watched := newWatchedWriter(out)
	s.out = &countingWriter{w: watched, c: s.wire, before: s.afterResponse.beforeWrite, after: s.asking.wrote}
	s.emitters.Add(1)
	go func() {
		defer s.emitters.Done()
		for {
			select {
			case code := <-s.rejects:
				s.out.rejectLine(code)
			case <-s.stopRejects:
				return
			}
		}
	}()
	conn := acpsdk.NewAgentSideConnection(s, s.out, &countingReader{r: newAliasReader(in, &s.raw), c: s.wire, gate: s.ready, reject: s.queueReject})
	conn.SetLogger(s.log)
	s.conn = conn
	close(s.ready)

	var err error
	select {
	case <-conn.Done():
		s.log.Info("client closed the connection")
	case <-watched.failed:
		// The client stopped reading (a client that closes its connection
		// without closing our stdin): treat it as the end of the connection.
		s.log.Info("client stopped reading the connection", "err", watched.err)
	case <-ctx.Done():
		err = ErrServerClosed
	}
	// Bounded: a peer that stopped reading stdout must not hang the exit.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveShutdownTimeout)
	defer cancel()
	if serr := s.Shutdown(sctx); serr != nil {
		s.log.Warn("shutdown did not complete", "err", serr)
	}
	return err
}

// maxQueuedRejects bounds the answers to undecodable lines waiting to be
// written; beyond it (a client sending garbage and not reading) they are
// dropped.
const maxQueuedRejects = 64

// queueReject queues the answer to an undecodable line without blocking.
func (s *Server) queueReject(code int) {
	select {
	case s.rejects <- code:
	default:
		s.log.Warn("dropped the error reply to an undecodable line", "code", code)
	}
}

// serveShutdownTimeout bounds the graceful part of Serve's own shutdown
// (answering requests already read).
const serveShutdownTimeout = 10 * time.Second

// Shutdown stops admitting prompts, cancels every in-flight prompt (their
// turns end aborted and their final updates are sent) and waits until
// every request read so far has been answered, or ctx ends. Bound agents
// stay alive (autonomous work may still stream) until Close. It is
// idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	var bs []*bound
	for _, b := range s.sessions {
		bs = append(bs, b)
	}
	s.mu.Unlock()
	for _, b := range bs {
		b.cancelPrompt(errShutdown, func() {
			// Record why first: the prompt's own cancellation says "user".
			b.agent.Cancel(session.AbortReason{Kind: agent.AbortShutdown}, true)
		})
	}
	if err := s.prompts.Wait(ctx); err != nil {
		return err
	}
	return s.waitAnswered(ctx)
}

// waitAnswered waits until every request read from the client has been
// answered on the wire.
func (s *Server) waitAnswered(ctx context.Context) error {
	for {
		ok, changed := s.wire.settled()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close detaches and releases every bound session: agents the server
// created are closed (their open turns end "disposed") and unregistered,
// sessions it made live are removed from the store (which flushes and
// releases them in persistence), and it waits for pending updates to be
// sent or ctx to end. Call it after Shutdown and after the subagent
// runtime drained. It is idempotent.
func (s *Server) Close(ctx context.Context) error {
	shutdownErr := s.Shutdown(ctx)
	s.mu.Lock()
	s.closed = true
	bs := make([]*bound, 0, len(s.sessions))
	for id, b := range s.sessions {
		bs = append(bs, b)
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	errs := []error{shutdownErr}
	for _, b := range bs {
		errs = append(errs, s.release(ctx, b))
	}
	s.stopOnce.Do(func() { close(s.stopRejects) })
	s.stopFollowingChildren()
	if err := s.emitters.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("acp: pending session updates not sent: %w", err))
	}
	return errors.Join(errs...)
}

// release closes what the server owns of one detached session.
func (s *Server) release(ctx context.Context, b *bound) error {
	b.cancelPrompt(errClosed, nil)
	s.questions().Drop(b.id)
	s.gate.forget(b.id)
	s.forgetRoots(b.id)
	s.rootPolicies().Forget(b.id)
	s.forgetModel(b.id)
	var errs []error
	if b.agent != nil && b.ownAgent && s.opts.BeforeRelease != nil {
		if err := s.opts.BeforeRelease(ctx, b.agent); err != nil {
			errs = append(errs, fmt.Errorf("release children of session %s: %w", b.id, err))
		}
	}
	if b.agent != nil && b.ownAgent {
		if err := b.agent.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close agent of session %s: %w", b.id, err))
		}
		if s.opts.Agents != nil {
			s.opts.Agents.Unregister(b.agent)
		}
	}
	if b.unsub != nil {
		b.unsub()
	}
	s.afterResponse.remove(b.id)
	if err := b.mcp.Close(); err != nil {
		errs = append(errs, fmt.Errorf("stop MCP servers of session %s: %w", b.id, err))
	}
	if b.sess != nil && b.ownSession {
		if err := s.opts.Sessions.Remove(b.id); err != nil {
			errs = append(errs, fmt.Errorf("release session %s: %w", b.id, err))
		}
	}
	return errors.Join(errs...)
}

var (
	errShutdown = errors.New("acp: server shutting down")
	errClosed   = errors.New("acp: session closed")
)

// sendTo returns the sendFunc of session id.
func (s *Server) sendTo(id string) sendFunc {
	return func(ctx context.Context, u acpsdk.SessionUpdate) error {
		<-s.ready
		return s.conn.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u})
	}
}

// flush waits until every update queued for b so far has been written (or
// failed to write), or ctx ends (an error). It does not stop early when
// the connection is done: that only means the client closed stdin, and it
// may still read stdout, so a prompt's final updates must still precede
// its response. Writes to a gone reader fail fast, so this cannot hang
// longer than the response write itself would.
func (s *Server) flush(ctx context.Context, b *bound) error {
	select {
	case <-b.em.barrier():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shown waits until every update of session id queued so far (in
// particular the tool_call of a call just made durable) is on the wire,
// or ctx ends. A session not bound to this connection has nothing to
// wait for. It is what agent.Journal.Shown (app's journal) waits on
// before a tool runs.
func (s *Server) Shown(ctx context.Context, id string) error {
	s.mu.Lock()
	b, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.flush(ctx, b)
}

// lookup returns the bound session id, or a typed error for a malformed
// or unknown id.
func (s *Server) lookup(id string) (*bound, error) {
	if err := session.ValidateID(id); err != nil {
		return nil, &Error{Code: CodeInvalidSessionID, Message: fmt.Sprintf("invalid session id %q: %v", id, err), Err: err}
	}
	s.mu.Lock()
	b, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		if parent, child := s.liveChild(id); child {
			return nil, errChildRequest(id, parent)
		}
		return nil, errorf(CodeUnknownSession, "unknown session: %s (create it with session/new or load it with session/load)", id)
	}
	return b, nil
}

// bindAgent attaches a live top-level session and its agent to the
// connection. With replay, the session's log is replayed as session/update
// before any live update; the caller flushes.
func (s *Server) bindAgent(sess *session.Session, ag *agent.Agent, ownAgent, ownSession, replay bool) (*bound, error) {
	b := &bound{id: sess.ID(), sess: sess, agent: ag, ownAgent: ownAgent, ownSession: ownSession}
	tr := newTranslator(s.toolLookup(ag)).withDepth(sess.Header().DelegationDepth).withSession(sess.ID())
	tr = tr.withModels(s.opts.Models)
	tr.configModes = true
	tr.cwd = sess.Header().Cwd
	if s.offersSandboxOption() && sess.Header().Origin != session.OriginSubagent {
		// A replay folds the choices from the default; a live bind
		// starts from the session's state now.
		on := s.sandboxDefault(b.id, sess.Header().Cwd)
		if !replay {
			on = s.sandboxOn(b)
		}
		tr.sandbox = &on
	}
	if s.offersThinkingOption(b) {
		// As for the sandbox: a replay folds from the default (on).
		on := true
		if !replay {
			on = !s.SessionNoThinking(b.id)
		}
		tr.thinking = &on
	}
	tr.ctx.cfg, tr.ctx.native = s.opts.Budget, s.wire.compaction.Load()
	if !replay {
		// No replay folds the log's earlier choices and learned context
		// windows: start from them.
		tr.model, tr.mode = s.SessionModel(b.id), s.modeOf(b)
		tr.ctx.learned = ag.LearnedWindows()
	}
	b.em = newEmitter(tr, s.sendTo(b.id), &s.emitters, s.log.With("session_id", b.id))
	b.em.sendText = s.sendTextTo(b.id)
	b.em.sendRaw = s.sendRawTo(b.id)
	if d := s.opts.Durable; d != nil {
		b.em.durable = func(ctx context.Context, seq int64) error { return d(ctx, b.id, seq) }
	}
	if d := s.opts.DurableText; d != nil {
		b.em.durableText = func(ctx context.Context, seq int64) error { return d(ctx, b.id, seq) }
	}
	b.unsub = ag.Subscribe(b.em.pushLive)
	// The live stream starts after the log's current length; a replay
	// streams the log up to there.
	length := int64(sess.Len())

	// Refused after Close before anything is queued to send, and
	// registered in the same critical section as the replay is queued:
	// a Close either sees the binding (and releases it) or refuses it,
	// and a refused bind streams no replay.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		b.unsub()
		return nil, errorf(CodeShuttingDown, "the agent is shutting down")
	}
	s.sessions[b.id] = b
	if replay {
		b.em.pushFront(item{replayOf: sess, replayLen: length})
	} else {
		b.em.skipTo(length)
	}
	b.em.resume()
	return b, nil
}

// cancelPrompt cancels the in-flight prompt, if any, after running before
// (when not nil). It reports whether a prompt was in flight.
func (b *bound) cancelPrompt(cause error, before func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel == nil {
		return false
	}
	if before != nil {
		before()
	}
	b.cancel(cause)
	return true
}

// recoverTo turns a handler panic into an internal error (logged with its
// stack), so one faulty request does not kill the process serving the
// editor. With Options.PanicOnBug it re-panics.
func (s *Server) recoverTo(method string, errp *error) {
	p := recover()
	if p == nil {
		return
	}
	s.log.Error("handler panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
	if s.opts.PanicOnBug {
		panic(p)
	}
	*errp = toRequestError(&Error{Code: CodeInternal, Message: fmt.Sprintf("%s handler panicked: %v", method, p)})
}
