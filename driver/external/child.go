package external

// This file is the Child: the external agent of one child session, seen
// by the child's agent loop as its model (Stream) and its one tool
// (Tool), and the turn that maps one session/prompt onto the loop's steps.

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// ToolName is the tool the child's tool calls are recorded as: each
// mirrors one tool call of the external agent.
const ToolName = "external_tool"

// Child is the external agent of one child session. It is the child
// agent's model (agent.Options.Model) and provides its only tool (Tool);
// Close (agent.Options.OnClose) stops the process.
type Child struct {
	opts Options
	cmd  Command
	sess *session.Session
	log  *slog.Logger

	mu     sync.Mutex
	proc   *proc
	turn   *turn
	closed bool
}

var _ model.Model = (*Child)(nil)

// New returns the Child of the child session sess running cmd. Nothing
// starts until the child's first turn.
func New(sess *session.Session, cmd Command, opts Options) *Child {
	opts.defaults()
	return &Child{opts: opts, cmd: cmd, sess: sess, log: opts.Logger.With("session_id", sess.ID(), "external_agent", cmd.Name)}
}

// turn is one session/prompt: what the agent sent, queued for the loop's
// steps, and how the prompt ended.
type turn struct {
	p    *proc
	sid  string // the external session
	q    []item
	wake chan struct{} // a value when q grew or the turn ended

	tools   map[string]*toolState
	granted map[string]bool // paths whose edit the person allowed

	ended    bool
	endCh    chan struct{}
	stop     acp.StopReason
	err      error
	consumed bool // the loop saw the end

	cancelOnce sync.Once
	cancelled  chan struct{}
	stopCancel func() bool
}

type item struct {
	chunk *session.Chunk
	call  *toolState
}

// toolState is one tool call of the agent's, as its updates left it.
type toolState struct {
	id        string
	title     string
	kind      acp.ToolKind
	status    acp.ToolCallStatus
	content   []acp.ToolCallContent
	locations []acp.ToolCallLocation
	rawInput  any
	rawOutput any
	done      chan struct{}
	closed    bool
	// started is closed when the child's loop runs the call (its
	// tool/call is recorded and shown): a question about it waits for it.
	started     chan struct{}
	startedOnce sync.Once
}

func (t *turn) isCancelled() bool {
	select {
	case <-t.cancelled:
		return true
	default:
		return false
	}
}

// scope is ctx, also cancelled when the turn is cancelled or ends.
func (t *turn) scope(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-t.cancelled:
		case <-t.endCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

func (t *turn) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Stream is the child's model call: the first call of a turn sends its
// newest user message as session/prompt; each call returns what the agent
// sent up to its next tool call (which ends the step with a call of
// ToolName) or the end of the prompt.
func (c *Child) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		t, err := c.turnFor(ctx, req)
		if err != nil {
			yield(session.Chunk{}, err)
			return
		}
		for {
			it, ok, err := c.next(ctx, t)
			if err != nil {
				yield(session.Chunk{}, err)
				return
			}
			if !ok {
				yield(session.Chunk{Type: session.ChunkFinish, Finish: finishOf(t.stop)}, nil)
				return
			}
			if it.call != nil {
				args, _ := json.Marshal(map[string]any{"title": it.call.title, "kind": string(it.call.kind), "rawInput": it.call.rawInput})
				if !yield(session.Chunk{Type: session.ChunkToolCall, ID: it.call.id, Name: ToolName, Arguments: string(args)}, nil) {
					return
				}
				yield(session.Chunk{Type: session.ChunkFinish, Finish: model.FinishToolCalls}, nil)
				return
			}
			if !yield(*it.chunk, nil) {
				return
			}
		}
	}
}

// finishOf maps a stop reason to the loop's finish.
func finishOf(r acp.StopReason) string {
	switch r {
	case acp.StopReasonMaxTokens:
		return model.FinishLength
	case acp.StopReasonRefusal:
		return model.FinishContentFilter
	}
	return model.FinishStop
}

// turnFor returns the turn a model call continues, or starts one with the
// request's newest user message.
func (c *Child) turnFor(ctx context.Context, req model.Request) (*turn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, failf(nil, "external agent %s: the child was closed", c.cmd.Name)
	}
	if t := c.turn; t != nil && !t.consumed {
		c.mu.Unlock()
		return t, nil
	}
	c.mu.Unlock()
	prompt := newestUser(req.Messages)
	if len(prompt) == 0 {
		return nil, failf(nil, "external agent %s: there is no message to send", c.cmd.Name)
	}
	p, err := c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := c.record()
	if err != nil || rec == nil {
		return nil, failf(err, "external agent %s: its session is not recorded", c.cmd.Name)
	}
	t := &turn{p: p, sid: rec.SessionID, wake: make(chan struct{}, 1), tools: map[string]*toolState{}, granted: map[string]bool{},
		endCh: make(chan struct{}), cancelled: make(chan struct{})}
	c.mu.Lock()
	if c.proc != p {
		c.mu.Unlock()
		if cause := p.cause(); cause != nil {
			return nil, cause
		}
		return nil, failf(nil, "external agent %s: the child was closed", c.cmd.Name)
	}
	c.turn = t
	c.mu.Unlock()
	t.stopCancel = context.AfterFunc(ctx, func() { c.cancelTurn(t) })
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		resp, err := p.call(p.life, func(ctx context.Context) (any, error) {
			return p.conn.Prompt(ctx, acp.PromptRequest{SessionId: acp.SessionId(rec.SessionID), Prompt: prompt})
		}, "session/prompt")
		var stop acp.StopReason
		if err == nil {
			stop = resp.(acp.PromptResponse).StopReason
		}
		c.endTurn(t, stop, err)
	}()
	return t, nil
}

// newestUser is the content of the trailing user messages of msgs (the
// task, or what send_message delivered), as ACP content.
func newestUser(msgs []model.Message) []acp.ContentBlock {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == session.RoleUser {
		i--
	}
	var out []acp.ContentBlock
	for _, m := range msgs[i:] {
		for _, b := range m.Content {
			if b.Type == session.BlockText && b.Text != "" {
				out = append(out, acp.TextBlock(b.Text))
			}
		}
	}
	return out
}

// next waits for what the turn has next: an item, its end (ok false), or
// ctx's end, which cancels the turn and waits (CancelGrace) for the agent
// to stop, killing it when it does not.
func (c *Child) next(ctx context.Context, t *turn) (item, bool, error) {
	for {
		c.mu.Lock()
		if len(t.q) > 0 {
			it := t.q[0]
			t.q = t.q[1:]
			c.mu.Unlock()
			return it, true, nil
		}
		if t.ended {
			t.consumed = true
			if c.turn == t {
				c.turn = nil
			}
			err := t.err
			c.mu.Unlock()
			if t.stopCancel != nil {
				t.stopCancel()
			}
			if err == nil && t.stop == acp.StopReasonCancelled && ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return item{}, false, err
		}
		c.mu.Unlock()
		select {
		case <-t.wake:
		case <-ctx.Done():
			c.cancelTurn(t)
			c.awaitEnd(t)
			c.mu.Lock()
			t.consumed = true
			if c.turn == t {
				c.turn = nil
			}
			c.mu.Unlock()
			return item{}, false, context.Cause(ctx)
		}
	}
}

// cancelTurn sends session/cancel once; the agent must answer the prompt
// within CancelGrace or it is killed.
func (c *Child) cancelTurn(t *turn) {
	t.cancelOnce.Do(func() {
		close(t.cancelled)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := t.p.conn.Cancel(ctx, acp.CancelNotification{SessionId: acp.SessionId(t.sid)}); err != nil {
			c.log.Debug("session/cancel not sent", "err", err)
		}
	})
}

// awaitEnd waits CancelGrace for a cancelled turn's prompt to end, then
// kills the agent.
func (c *Child) awaitEnd(t *turn) {
	select {
	case <-t.endCh:
	case <-time.After(c.opts.CancelGrace):
		t.p.fail(failf(nil, "external agent %s did not stop within %s of session/cancel", c.cmd.Name, c.opts.CancelGrace))
		<-t.endCh
	}
}

// endTurn records how t's prompt ended and wakes its waiters.
func (c *Child) endTurn(t *turn, stop acp.StopReason, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.ended {
		return
	}
	t.ended, t.stop, t.err = true, stop, err
	for _, ts := range t.tools {
		ts.close()
	}
	close(t.endCh)
	t.signal()
}

func (ts *toolState) close() {
	if !ts.closed {
		ts.closed = true
		close(ts.done)
	}
}

// procFailed ends the turn of a failed process and forgets the process:
// the next turn starts the command again (and resumes its session).
func (c *Child) procFailed(p *proc, err error) {
	c.mu.Lock()
	t := c.turn
	if c.proc == p {
		c.proc = nil
	}
	c.mu.Unlock()
	if t != nil && t.p == p {
		c.endTurn(t, "", err)
	}
}

// awaitShown waits until the child's loop runs the call id (so a
// question about it follows the call in the log and on the wire), the
// turn ends or ctx ends. A call the agent never announced is waited for
// briefly (its notification may still be on its way), then not at all.
func (c *Child) awaitShown(ctx context.Context, t *turn, id string) {
	// Bounded: an agent may ask about a call while the loop still waits on
	// an earlier one of its calls (parallel calls); it is then asked at once.
	limit := time.NewTimer(2 * time.Second)
	defer limit.Stop()
	for {
		c.mu.Lock()
		ts := t.tools[id]
		c.mu.Unlock()
		var started <-chan struct{}
		poll := time.After(10 * time.Millisecond)
		if ts != nil {
			started, poll = ts.started, nil
		}
		select {
		case <-started:
			return
		case <-poll:
		case <-t.endCh:
			return
		case <-ctx.Done():
			return
		case <-limit.C:
			return
		}
	}
}

// liveTurn is the turn of p in progress (nil when none, or cancelled).
func (c *Child) liveTurn(p *proc) *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.turn; t != nil && t.p == p && !t.ended {
		return t
	}
	return nil
}

// onUpdate folds one session/update into the turn in progress. Updates of
// other sessions (a nested child's, or a session/load replay, which comes
// before any turn) are not the child's turn and are dropped.
func (c *Child) onUpdate(p *proc, n acp.SessionNotification) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.turn
	if t == nil || t.p != p || t.ended {
		return
	}
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		if s := blockText(u.AgentMessageChunk.Content); s != "" {
			t.q = append(t.q, item{chunk: &session.Chunk{Type: session.ChunkText, Text: s}})
		}
	case u.AgentThoughtChunk != nil:
		if s := blockText(u.AgentThoughtChunk.Content); s != "" {
			t.q = append(t.q, item{chunk: &session.Chunk{Type: session.ChunkReasoning, Text: s}})
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		id := string(tc.ToolCallId)
		if _, dup := t.tools[id]; dup || id == "" {
			return
		}
		ts := &toolState{id: id, title: tc.Title, kind: tc.Kind, status: tc.Status, content: tc.Content,
			locations: tc.Locations, rawInput: tc.RawInput, rawOutput: tc.RawOutput, done: make(chan struct{}), started: make(chan struct{})}
		t.tools[id] = ts
		if finished(ts.status) {
			ts.close()
		}
		t.q = append(t.q, item{call: ts})
	case u.ToolCallUpdate != nil:
		up := u.ToolCallUpdate
		ts := t.tools[string(up.ToolCallId)]
		if ts == nil {
			return
		}
		if up.Title != nil {
			ts.title = *up.Title
		}
		if up.Kind != nil {
			ts.kind = *up.Kind
		}
		if up.Content != nil {
			ts.content = up.Content
		}
		if up.Locations != nil {
			ts.locations = up.Locations
		}
		if up.RawOutput != nil {
			ts.rawOutput = up.RawOutput
		}
		if up.Status != nil {
			ts.status = *up.Status
			if finished(ts.status) {
				ts.close()
			}
		}
	default:
		return
	}
	t.signal()
}

func finished(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed
}

// ensure returns the running process with the child's session open,
// starting the command (after Options.Approve) and creating, resuming or
// loading the session as needed. A process lives for one activation of
// the child (Close stops it), so each activation after the first starts
// the command again and resumes or loads the recorded session.
func (c *Child) ensure(ctx context.Context) (*proc, error) {
	c.mu.Lock()
	if p := c.proc; p != nil {
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()
	if c.opts.Workspace == nil {
		return nil, failf(nil, "external agent %s: no workspace is available", c.cmd.Name)
	}
	env, err := c.opts.Workspace.Env(ctx, c.sess.ID())
	if err != nil {
		return nil, err
	}
	if c.opts.Approve != nil {
		if err := c.opts.Approve(ctx, c.sess.ID(), c.cmd); err != nil {
			return nil, err
		}
	}
	rec, err := c.record()
	if err != nil {
		return nil, failf(err, "external agent %s: %v", c.cmd.Name, err)
	}
	if rec != nil && !c.canResume(rec) {
		// Known before anything starts: the record says what it announced.
		return nil, c.notResumable()
	}
	p, err := c.startProc(ctx, env.Cwd)
	if err != nil {
		return nil, err
	}
	if err := c.openSession(ctx, p, env.Cwd, rec); err != nil {
		p.stop()
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		p.stop()
		return nil, failf(nil, "external agent %s: the child was closed", c.cmd.Name)
	}
	c.proc = p
	c.mu.Unlock()
	return p, nil
}

// record is the child's last external session record.
func (c *Child) record() (*Record, error) {
	events, err := c.sess.Events()
	if err != nil {
		return nil, err
	}
	return LastRecord(events)
}

func allowed(pref *bool) bool { return pref == nil || *pref }

// canResume reports whether a recorded session can be taken up again
// (session/resume or session/load advertised and not refused by the
// definition).
func (c *Child) canResume(rec *Record) bool {
	return (rec.Resume && allowed(c.cmd.Resume)) || (rec.LoadSession && allowed(c.cmd.LoadSession))
}

func (c *Child) notResumable() error {
	return failf(nil, "cannot resume: the agent does not support session/load (external agent %s, command %s)", c.cmd.Name, c.cmd.Line())
}

// openSession creates the child's external session (recorded in its log)
// or takes up the recorded one.
func (c *Child) openSession(ctx context.Context, p *proc, cwd string, rec *Record) error {
	sctx, cancel := context.WithTimeout(ctx, c.opts.InitTimeout)
	defer cancel()
	if rec == nil {
		resp, err := p.call(sctx, func(ctx context.Context) (any, error) {
			return p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
		}, "session/new")
		if err != nil {
			return err
		}
		r := Record{
			SessionID: string(resp.(acp.NewSessionResponse).SessionId), Command: c.cmd.Command, Args: c.cmd.Args,
			LoadSession: p.caps.LoadSession, Resume: p.caps.SessionCapabilities.Resume != nil,
		}
		if p.info != nil {
			r.AgentName, r.AgentVersion = p.info.Name, p.info.Version
		}
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := c.sess.AppendRaw(TypeExternal, data, session.Ignorable()); err != nil {
			return err
		}
		return nil
	}
	// What it advertises now decides; the record said it could.
	resume := p.caps.SessionCapabilities.Resume != nil && allowed(c.cmd.Resume)
	load := p.caps.LoadSession && allowed(c.cmd.LoadSession)
	sid := acp.SessionId(rec.SessionID)
	if resume {
		_, err := p.call(sctx, func(ctx context.Context) (any, error) {
			return p.conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}})
		}, "session/resume")
		if err == nil || !load || p.cause() != nil {
			return err
		}
		c.log.Info("session/resume failed; loading the session instead", "err", err)
	}
	if !load {
		return c.notResumable()
	}
	// The replay comes before any turn: onUpdate drops it (the child's log
	// has the conversation already).
	_, err := p.call(sctx, func(ctx context.Context) (any, error) {
		return p.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []acp.McpServer{}})
	}, "session/load")
	return err
}

// Close ends the child's use of the agent: a turn in progress is ended
// and the process stopped with everything it started. The child's agent
// closes when the child settles (a continuable child after each piece of
// work), is released, or the agent exits, so the process lives only while
// the child runs; the next activation starts the command again and takes
// up the recorded session (ensure). It is idempotent.
func (c *Child) Close() {
	c.mu.Lock()
	c.closed = true
	p := c.proc
	c.proc = nil
	t := c.turn
	c.mu.Unlock()
	if t != nil {
		c.endTurn(t, "", failf(nil, "external agent %s: the child was closed", c.cmd.Name))
	}
	if p != nil {
		p.stop()
	}
}

// nestedLine takes a subagent_update out of the agent's stdout (the SDK
// cannot decode it): the announced child is recorded in the child's log
// and reported. It reports whether line was one.
func (c *Child) nestedLine(line []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Update struct {
				Kind        string `json:"sessionUpdate"`
				SessionID   string `json:"sessionId"`
				Title       string `json:"title"`
				Description string `json:"description"`
				State       *struct {
					State      string `json:"state"`
					StopReason string `json:"stopReason"`
				} `json:"state"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != acp.ClientMethodSessionUpdate || msg.Params.Update.Kind != "subagent_update" {
		return false
	}
	u := msg.Params.Update
	if u.SessionID == "" {
		return true
	}
	n := Nested{SessionID: u.SessionID, Title: u.Title, Description: u.Description}
	if u.State != nil {
		n.State, n.StopReason = u.State.State, u.State.StopReason
	}
	data, err := json.Marshal(n)
	if err == nil {
		_, err = c.sess.AppendRaw(TypeNestedChild, data, session.Ignorable())
	}
	if err != nil {
		c.log.Warn("a nested child of the external agent was not recorded", "child", n.SessionID, "err", err)
	}
	if c.opts.OnNested != nil {
		c.opts.OnNested(c.sess.ID(), n)
	}
	return true
}

// Tool is the child's one tool: each call mirrors a tool call of the
// external agent and returns once the agent finished it (its status and
// content are the result), or the turn ended.
func (c *Child) Tool() tool.Tool { return mirror{c} }

type mirror struct{ c *Child }

func (m mirror) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name:        ToolName,
		Description: "A tool call the external agent made itself (recorded, never offered to a model).",
		Parameters:  json.RawMessage(`{"type":"object"}`),
	}
}

func (m mirror) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	c := m.c
	c.mu.Lock()
	t := c.turn
	var ts *toolState
	if t != nil {
		ts = t.tools[inv.CallID]
	}
	c.mu.Unlock()
	if ts == nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeToolOutcomeUnknown, Message: "the external agent's call is not known (the agent was restarted)"}
	}
	ts.startedOnce.Do(func() { close(ts.started) })
	select {
	case <-ts.done:
	case <-ctx.Done():
		c.cancelTurn(t)
		select {
		case <-ts.done:
		case <-t.endCh:
		case <-time.After(c.opts.CancelGrace):
		}
	}
	c.mu.Lock()
	status, title, kind := ts.status, ts.title, ts.kind
	text := textOf(ts.content)
	display := displayOf(ts.content, ts.locations)
	raw := map[string]any{"title": title, "kind": string(kind), "status": string(status)}
	if ts.rawOutput != nil {
		raw["rawOutput"] = ts.rawOutput
	}
	c.mu.Unlock()
	if text == "" {
		text = title
	}
	switch status {
	case acp.ToolCallStatusCompleted:
		return tool.Result{Content: []session.Block{session.Text(text)}, Raw: raw, Display: display}, nil
	case acp.ToolCallStatusFailed:
		return tool.Result{Content: []session.Block{session.Text("Error: " + text)}, IsError: true, Raw: raw, Display: display,
			Error: &session.ErrorInfo{Code: tool.CodeToolFailed, Message: text}}, nil
	}
	why := "the external agent's turn ended before the call finished"
	if ctx.Err() != nil {
		why = "the call was interrupted"
	}
	return tool.Result{Content: []session.Block{session.Text(fmt.Sprintf("Error: %s (%s)", why, strings.TrimSpace(title)))}, IsError: true, Raw: raw, Display: display,
		Error: &session.ErrorInfo{Code: tool.CodeToolCallInterrupted, Message: why}}, nil
}
