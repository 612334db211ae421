package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/persistence"
)

// System is one running agent composition as the runner sees it: the live
// session store (to observe) and the ACP server.
type System interface {
	// Store is the live session store; the runner registers its observer
	// before Serve is called.
	Store() *session.Store
	// Serve speaks ACP, reading requests from in and writing frames to out,
	// until in reaches EOF; then it shuts down (cancels prompts, settles or
	// cancels children, flushes persistence) and returns.
	Serve(ctx context.Context, in io.Reader, out io.Writer) error
}

// Config is what a Factory gets for one agent process of a run.
type Config struct {
	DataDir string
	Cwd     string
	// Sources are deterministic: a fresh DeterministicSources per process.
	Sources session.Sources
	// Script is the scenario's model section (a YAML document with the
	// top-level key "model"); nil when the scenario has none.
	Script []byte
	// Models are the scenario's model names (two or more offer the model
	// picker; see Scenario.Models).
	Models []string
	// ContextWindow is Scenario.ContextWindow.
	ContextWindow int
	// MaxTurns is Scenario.MaxTurns.
	MaxTurns int
	// TokenEstimates is Scenario.TokenEstimates.
	TokenEstimates map[string]map[int]int
	// ObserveModel must wrap the model the composition uses, so the runner
	// sees model calls start (model_call waits).
	ObserveModel func(model.Model) model.Model
	// ObserveQueued must be called when a background start begins to wait
	// for a slot (queued waits).
	ObserveQueued func(parentID, childID string)
	// ObserveStep must be every in-process agent's step gate
	// (agent.Options.StepGate), so step fences hold.
	ObserveStep func(ctx context.Context, c model.Caller)
	Faults      Faults
	Logger      *slog.Logger
	// Sandbox, when set, runs local commands in the sandbox.
	Sandbox *SandboxSpec
	// ExternalAgents is Scenario.ExternalAgents.
	ExternalAgents bool
}

// Factory builds one agent process of a run.
type Factory func(ctx context.Context, cfg Config) (System, error)

// stopTimeout bounds an agent's shutdown after its stdin closed.
const stopTimeout = 30 * time.Second

// Epoch is the first timestamp of every scenario session's deterministic
// clock (2026-01-01T00:00:00Z).
const Epoch = session.ScenarioEpoch

// Recording is everything a run produced, with the data directory and cwd
// replaced by $DATA and $CWD.
type Recording struct {
	// Wire holds every JSON-RPC frame, one canonical JSON object per line:
	// {"client":frame} or {"agent":frame}; {"scenario":"restart"} marks a
	// process restart.
	Wire []byte
	// Sessions holds every session file of the data directory, verbatim:
	// each starts with its header line ({"type":"session",...}). Sessions
	// are ordered as a tree: top-level sessions by (createdAt, id), each
	// followed by its descendants in the same order.
	Sessions []byte
	// Requests holds every model request, one canonical JSON object per
	// line, ordered by (script key, session id, call).
	Requests []byte
	// Transcript is the human-readable account.
	Transcript []byte
}

// stepResult is what a step produced, for the transcript.
type stepResult struct {
	Step    Step
	Session string   // resolved session id, if any
	Detail  string   // one-line outcome
	Stops   []string // stop reasons of awaited prompts
	Output  string   // multi-line output (list_agents_via_ext)
}

type runner struct {
	sc      *Scenario
	factory Factory
	logger  *slog.Logger
	root    string
	dataDir string
	cwd     string

	rec      *wireRecorder
	watch    *watcher
	requests *requestLog
	inst     *instance
	// workspace is the client's workspace (workspace.go), shared by the
	// client of every process of the run.
	workspace *clientWorkspace

	mu      sync.Mutex
	refs    map[string]string
	results []stepResult

	mcp *mcptest.HTTPServer // the scenario's MCP servers, if any (mcp.go)
}

type instance struct {
	sys       System
	client    *client
	toAgent   *io.PipeWriter
	fromAgent *io.PipeReader
	agentOut  *io.PipeWriter
	served    chan error
	unobserve func()
	cancel    context.CancelFunc
}

func (r *runner) resolve(ref string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.refs[ref]
	return id, ok
}

// teeWriter records bytes before passing them on, so a frame is in the
// recording before its receiver can react to it.
type teeWriter struct {
	tap io.Writer
	w   io.Writer
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.tap.Write(p)
	return t.w.Write(p)
}

// execute runs sc in root (an empty directory) and returns its recording.
func execute(ctx context.Context, sc *Scenario, factory Factory, root string, logger *slog.Logger) (*Recording, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &runner{
		sc: sc, factory: factory, logger: logger, root: root,
		dataDir: filepath.Join(root, "data"), cwd: fixedLengthCwd(root),
		rec: newWireRecorder(), watch: newWatcher(), requests: &requestLog{}, refs: map[string]string{},
		workspace: newClientWorkspace(sc.Client),
	}
	defer r.workspace.stop()
	for _, d := range []string{r.dataDir, r.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := r.seed(); err != nil {
		return nil, err
	}
	if err := r.writeFiles(ctx); err != nil {
		return nil, err
	}
	stopMCP, err := r.startMCP()
	if err != nil {
		return nil, err
	}
	defer stopMCP()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	runErr := r.steps(ctx)
	// Stop even when ctx ended: a failed run must still release the agent.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	stopErr := r.stop(sctx)
	if err := errors.Join(runErr, stopErr); err != nil {
		return nil, err
	}
	// The agent has exited: a last stdout line it left without a newline
	// is reported (record fails on it), not silently dropped.
	r.rec.finish()
	return r.record()
}

// seed writes the scenario's seeded sessions with the real persistence
// writer, so their files are exactly what the agent would have written.
func (r *runner) seed() error {
	if len(r.sc.Seed) == 0 {
		return nil
	}
	ps, err := persistence.Open(r.dataDir, persistence.Options{NoSync: true, Logger: r.logger})
	if err != nil {
		return err
	}
	defer ps.Close()
	for _, s := range r.sc.Seed {
		h := s.Header
		if h.Cwd == CwdPlaceholder {
			h.Cwd = r.cwd
		}
		evs := make([]session.Event, len(s.Events))
		for i, ev := range s.Events {
			ev.Data = json.RawMessage(strings.ReplaceAll(string(ev.Data), CwdPlaceholder, r.cwd))
			evs[i] = ev
		}
		if err := ps.Open(h, evs, false); err != nil {
			return fmt.Errorf("%s:%d: seed session %s: %w", r.sc.File, s.Line, h.ID, err)
		}
		if err := ps.Release(h.ID); err != nil {
			return fmt.Errorf("%s:%d: seed session %s: %w", r.sc.File, s.Line, h.ID, err)
		}
		r.refs[h.ID] = h.ID
	}
	return nil
}

// start launches one agent process on fresh pipes.
func (r *runner) start(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	var (
		sys System
		err error
	)
	sys, err = r.factory(sctx, Config{
		DataDir: r.dataDir,
		Cwd:     r.cwd,
		Sources: &session.DeterministicSources{Epoch: Epoch, Step: 1000},
		Script:  r.sc.Model,
		Models:  r.sc.Models,

		ContextWindow: r.sc.ContextWindow,
		MaxTurns:      r.sc.MaxTurns,

		TokenEstimates: r.sc.TokenEstimates,
		ObserveModel: func(m model.Model) model.Model {
			return observedModel{inner: m, r: r, sys: &sys}
		},
		ObserveQueued: r.watch.queuedStart,
		ObserveStep:   func(ctx context.Context, c model.Caller) { r.holdStep(ctx, sys, c) },
		Faults:        r.sc.Faults,
		Logger:        r.logger,
		Sandbox:       r.sc.Sandbox,

		ExternalAgents: r.sc.ExternalAgents,
	})
	if err != nil {
		cancel()
		return fmt.Errorf("start the agent: %w", err)
	}
	inR, inW := io.Pipe()   // client -> agent
	outR, outW := io.Pipe() // agent -> client
	in := &instance{
		sys: sys, toAgent: inW, fromAgent: outR, agentOut: outW,
		served: make(chan error, 1), cancel: cancel, unobserve: func() {},
	}
	if st := sys.Store(); st != nil {
		in.unobserve = r.watch.observe(st)
	}
	go func() {
		err := sys.Serve(sctx, inR, teeWriter{r.rec.tap(fromAgent), outW})
		// The agent is gone: end both directions so the client's read loop
		// and any write it is blocked in return.
		outW.Close()
		inR.CloseWithError(io.ErrClosedPipe)
		in.served <- err
	}()
	in.client = newClient(sctx, stream{
		Reader: outR,
		Writer: teeWriter{r.rec.tap(fromClient), inW},
		closeFn: func() error {
			inW.Close()
			return outR.Close()
		},
	}, r.watch, r.workspace)
	r.inst = in
	return nil
}

// stop ends the current agent process the way an editor does: it closes
// the agent's stdin and waits for the process to finish its shutdown.
func (r *runner) stop(ctx context.Context) error {
	in := r.inst
	if in == nil {
		return nil
	}
	r.inst = nil
	var errs []error
	if left := in.client.outstanding(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("prompts still unanswered at shutdown for sessions %v (add an await_prompt step)", left))
	}
	in.toAgent.Close()
	select {
	case err := <-in.served:
		if err != nil && !errors.Is(err, io.EOF) {
			errs = append(errs, fmt.Errorf("agent shutdown: %w", err))
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("agent did not shut down after stdin closed: %w", context.Cause(ctx)))
		in.cancel()
		<-in.served
	}
	<-in.client.conn.DisconnectNotify()
	in.client.conn.Close()
	in.unobserve()
	in.cancel()
	return errors.Join(errs...)
}

func (r *runner) steps(ctx context.Context) error {
	for _, st := range r.sc.Steps {
		res, err := r.step(ctx, st)
		if err != nil {
			return &StepError{File: r.sc.File, Step: st, Err: err}
		}
		r.results = append(r.results, res)
	}
	// Collect prompts sent in the background and never awaited.
	for _, id := range r.inst.client.outstanding() {
		if _, err := r.inst.client.awaitPrompts(ctx, id); err != nil {
			return fmt.Errorf("%s: awaiting prompts left open at the end: %w", r.sc.File, err)
		}
	}
	return nil
}

func (r *runner) sessionID(ref string) (string, error) {
	if id, ok := r.resolve(ref); ok {
		return id, nil
	}
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	if id, ok := r.watch.resolveLocked(r, ref); ok {
		return id, nil
	}
	return "", fmt.Errorf("unknown session reference %q", ref)
}

// step performs one client step of the scenario and returns its outcome.
// It is long because it is one switch over the step operations, each case
// a few lines of protocol calls; split per case, the cases would only
// move apart from the one place that shows every operation the client
// speaks.
func (r *runner) step(ctx context.Context, st Step) (stepResult, error) {
	res := stepResult{Step: st}
	c := r.inst.client
	switch st.Op {
	case OpInitialize:
		raw, err := c.call(ctx, "initialize", map[string]any{
			"protocolVersion":    1,
			"clientCapabilities": r.clientCapabilities(),
		})
		if err != nil {
			return res, err
		}
		var ir struct {
			ProtocolVersion int `json:"protocolVersion"`
			AgentInfo       struct {
				Name string `json:"name"`
			} `json:"agentInfo"`
		}
		_ = json.Unmarshal(raw, &ir)
		res.Detail = fmt.Sprintf("protocol %d, agent %s", ir.ProtocolVersion, ir.AgentInfo.Name)
	case OpNewSession:
		params := map[string]any{"cwd": r.cwd, "mcpServers": r.mcpServers()}
		if len(st.Dirs) > 0 {
			dirs, err := r.makeDirs(st.Dirs)
			if err != nil {
				return res, err
			}
			params["additionalDirectories"] = dirs
		}
		raw, err := c.call(ctx, "session/new", params)
		if err != nil {
			return res, err
		}
		var nr struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(raw, &nr); err != nil || nr.SessionID == "" {
			return res, fmt.Errorf("session/new returned no sessionId: %s", raw)
		}
		r.mu.Lock()
		r.refs[st.As] = nr.SessionID
		r.mu.Unlock()
		if err := r.afterNewSession(ctx, nr.SessionID); err != nil {
			return res, err
		}
		res.Session = nr.SessionID
		res.Detail = fmt.Sprintf("session %s as %q", nr.SessionID, st.As)
	case OpLoadSession:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		if _, err := c.call(ctx, "session/load", map[string]any{"sessionId": id, "cwd": r.cwd, "mcpServers": r.mcpServers()}); err != nil {
			return res, err
		}
		r.mu.Lock()
		if _, ok := r.refs[MainRef]; !ok {
			r.refs[MainRef] = id // a run that only loads addresses that session by default
		}
		r.mu.Unlock()
		res.Session, res.Detail = id, "loaded session "+id
	case OpPrompt:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		r.workspace.script(st.Permissions)
		r.workspace.scriptAnswers(st.Answers)
		if err := c.startPrompt(ctx, st, id); err != nil {
			return res, err
		}
		if st.Background {
			res.Detail = "sent (response awaited later)"
			return res, nil
		}
		stops, err := c.awaitPrompts(ctx, id)
		if err = expected(st, &res, stops, err); err != nil {
			return res, err
		}
	case OpAwaitPrompt:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		stops, err := c.awaitPrompts(ctx, id)
		if err == nil && len(stops) == 0 {
			return res, errors.New("no prompt is outstanding for this session")
		}
		if err = expected(st, &res, stops, err); err != nil {
			return res, err
		}
	case OpCancel:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		if err := c.notify(ctx, "session/cancel", map[string]any{"sessionId": id}); err != nil {
			return res, err
		}
		res.Detail = "cancel sent"
	case OpWait:
		if r.inst.sys.Store() == nil {
			return res, errors.New("waits observe the in-process runtime; this agent runs in another process")
		}
		if err := r.awaitCondition(ctx, r.inst.sys, st.Session, *st.Wait); err != nil {
			return res, err
		}
		if err := r.settleWire(ctx); err != nil {
			return res, err
		}
		res.Detail = describeWait(*st.Wait)
		if id, err := r.sessionID(st.Session); err == nil {
			res.Session = id
		}
	case OpRestart:
		if err := r.stop(ctx); err != nil {
			return res, err
		}
		r.rec.restart()
		if err := r.start(ctx); err != nil {
			return res, err
		}
		res.Detail = "agent process stopped (stdin closed) and started again on the same data directory"
	case OpWriteFile:
		if err := writeCwdFile(r.cwd, st.Path, st.Content); err != nil {
			return res, err
		}
		res.Detail = fmt.Sprintf("wrote $CWD/%s (%d bytes)", filepath.ToSlash(st.Path), len(st.Content))
	case OpListAgentsEx:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		raw, err := c.call(ctx, subagentsListMethod, map[string]any{"sessionId": id, "scope": st.Scope})
		if err != nil {
			return res, err
		}
		res.Output = renderExtList(raw)
		res.Detail = "scope " + st.Scope
	case OpSetMode:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		if _, err := c.call(ctx, "session/set_mode", map[string]any{"sessionId": id, "modeId": st.Mode}); err != nil {
			return res, err
		}
		res.Detail = "mode " + st.Mode
	case OpSetModel:
		id, err := r.sessionID(st.Session)
		if err != nil {
			return res, err
		}
		res.Session = id
		if _, err := c.call(ctx, "session/set_config_option", map[string]any{"sessionId": id, "configId": "model", "value": ScriptModelID(st.Model)}); err != nil {
			return res, err
		}
		res.Detail = "model " + ScriptModelID(st.Model)
	case OpDeleteSession, OpCancelRequest:
		return r.step2026(ctx, st, res)
	default:
		return res, fmt.Errorf("unknown operation %q", st.Op)
	}
	return res, nil
}

func describeWait(w Wait) string {
	var parts []string
	if w.ChildSettled > 0 {
		parts = append(parts, fmt.Sprintf("%d settlement notice(s) received", w.ChildSettled))
	}
	if w.TurnStarted > 0 {
		parts = append(parts, fmt.Sprintf("turn %d started", w.TurnStarted))
	}
	if w.TurnEnded > 0 {
		parts = append(parts, fmt.Sprintf("turn %d ended", w.TurnEnded))
	}
	if w.ModelCall != nil {
		parts = append(parts, fmt.Sprintf("model call %d entered", *w.ModelCall))
	}
	if w.Idle {
		parts = append(parts, "idle")
	}
	return strings.Join(parts, ", ")
}

// flusher is implemented by systems that can wait for their queued
// session/update traffic.
type flusher interface {
	FlushUpdates(ctx context.Context) error
}

// settleWire runs after a wait is satisfied and before the next step
// sends anything. The watcher learns of an event from a store observer,
// which runs before the session's own subscribers (the ACP server's
// update queue); taking every session's append lock once lets those
// subscribers finish, and FlushUpdates then waits until the queued
// updates were written (and so recorded). Without it an update of an
// autonomous turn could land after the next client frame on one run and
// before it on another.
func (r *runner) settleWire(ctx context.Context) error {
	if st := r.inst.sys.Store(); st != nil {
		for _, s := range st.List() {
			s.Len()
		}
	}
	if f, ok := r.inst.sys.(flusher); ok {
		return f.FlushUpdates(ctx)
	}
	return nil
}

// idleWaiter is implemented by systems that can wait until a session's
// live agent is idle.
type idleWaiter interface {
	WaitIdle(ctx context.Context, sessionID string) error
}

// awaitCondition waits until w holds on the session ref names. For an idle
// condition it then also waits until the session's live agent (if any)
// reports idle: the log shows turn/end before the agent's loop has
// stopped, and the subagent runtime decides between steering and a new
// turn by the agent's status, so the log alone is not enough to order a
// child's settlement after a parent's turn.
func (r *runner) awaitCondition(ctx context.Context, sys System, ref string, w Wait) error {
	if err := r.watch.await(ctx, r, ref, w); err != nil {
		return err
	}
	if !w.Idle {
		return nil
	}
	iw, ok := sys.(idleWaiter)
	if !ok {
		return nil
	}
	id, err := r.sessionID(ref)
	if err != nil {
		return err
	}
	return iw.WaitIdle(ctx, id)
}

// expected checks the answers to a step's prompts against its
// expect_error: a prompt expected to fail must be answered with a
// JSON-RPC error (shown as the step's outcome), any other with stop
// reasons.
func expected(st Step, res *stepResult, stops []string, err error) error {
	res.Stops = stops
	var re *promptError
	switch {
	case !st.ExpectError:
		return err
	case errors.As(err, &re):
		res.Detail = re.Error()
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("expected the prompt to fail (expect_error), it ended with stop reason %s", strings.Join(stops, ", "))
}

// clientCapabilities is what the scenario client announces in initialize.
func (r *runner) clientCapabilities() map[string]any {
	caps := map[string]any{"fs": map[string]any{"readTextFile": r.sc.Client.FS, "writeTextFile": r.sc.Client.FS}, "terminal": r.sc.Client.Terminal}
	if r.sc.Client.Compaction {
		caps["session"] = map[string]any{"compaction": map[string]any{}}
	}
	if r.sc.Client.Subagents {
		caps["subagents"] = map[string]any{}
	}
	if r.sc.Client.Elicitation {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	if r.sc.Client.QuestionsBetweenPrompts {
		caps["_meta"] = map[string]any{"acp-agent": map[string]any{"questionsBetweenPrompts": true}}
	}
	return caps
}

// cwdLength is the length of every run's working directory path. The
// model sees the real cwd (in the system prompt's environment block), so
// the token estimates recorded in the log depend on its length; padding it
// to a constant keeps them the same whatever temp dir a run is given.
const cwdLength = 160

// fixedLengthCwd returns the working directory of a run in root, padded
// to cwdLength bytes (roots longer than that get no padding).
func fixedLengthCwd(root string) string {
	cwd := filepath.Join(root, "cwd")
	if pad := cwdLength - len(cwd) - 1; pad > 0 {
		cwd += "_" + strings.Repeat("x", pad-1)
	}
	return cwd
}
