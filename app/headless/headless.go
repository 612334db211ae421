package headless

// This file defines Run: the client of one exec run, its permission
// answers and the rendering of what the agent sent.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// Output formats.
const (
	OutputText  = "text"
	OutputJSONL = "jsonl"
)

// Answers to a permission question no rule decided.
const (
	AskDeny  = "deny"
	AskAllow = "allow"
)

// Permission option ids the agent offers (acp.OptionAllowOnce, ...).
const (
	optionAllowOnce  = "allow_once"
	optionRejectOnce = "reject_once"
)

// Options configure one run.
type Options struct {
	// Prompt is the user's text.
	Prompt string
	// Cwd is the session's working directory (absolute).
	Cwd string
	// Resume, when set, reattaches the stored session of that id
	// (session/resume) instead of creating one.
	Resume string
	// MCPServers is the JSON array an editor sends as mcpServers; nil
	// sends an empty one.
	MCPServers json.RawMessage
	// Mode, when set, is sent with session/set_mode before the prompt.
	Mode string
	// Ask answers the questions no mode or rule decided: AskDeny (the
	// default) or AskAllow.
	Ask string
	// Output is OutputText (the default) or OutputJSONL.
	Output string
	// Stdout gets the answer or the JSON lines; Stderr the refusals and,
	// with Progress, what the agent is doing.
	Stdout, Stderr io.Writer
	Progress       bool
	// Cancel, when it yields, cancels the turn (session/cancel) and ends
	// any wait for children; the run then ends with StopReason
	// "cancelled".
	Cancel <-chan struct{}
	// AfterTurn, when set, runs after the prompt was answered and before
	// the connection closes (the composition waits there for background
	// children and the turns their notices start). Updates keep flowing
	// to the output meanwhile.
	AfterTurn func(ctx context.Context, sessionID string) error
	// Answer, when set, is the text answer, read where the session is
	// recorded (the last assistant message of its last turn) once the run
	// is over; without it the answer is the text streamed since the last
	// tool call. Text output only.
	Answer func(sessionID string) (string, bool)
	// BeforePrompt, when set, runs just before session/prompt is sent
	// (the composition marks where the run's part of the log begins).
	BeforePrompt func(sessionID string)
}

// Result is how a run ended.
type Result struct {
	SessionID  string
	StopReason string
	// Limit is the limit that ended the turn ("max-steps", "budget",
	// "timeout"; the response's _meta "acp-agent/limit"), with its
	// detail; "" when none did.
	Limit, LimitDetail string
	// Refused counts the permission questions answered with a refusal.
	Refused int
	// Answers are the option ids given to the permission questions, in
	// the order they were answered (exec --record replays them).
	Answers []string
}

// RPCError is a JSON-RPC error the agent answered, with the stable code
// of its data ("UNKNOWN_SESSION", "TURN_FAILED", ...) when it had one.
type RPCError struct {
	Method  string
	Code    int64
	DataErr string
	Message string
}

func (e *RPCError) Error() string { return e.Message }

// Run drives one prompt over rwc (the agent's side: writes reach the
// agent's input, reads its output). It closes rwc when done, and returns
// once the agent's output ended. A failed request returns an *RPCError.
func Run(ctx context.Context, rwc io.ReadWriteCloser, o Options) (Result, error) {
	if o.Output == "" {
		o.Output = OutputText
	}
	c := &client{o: o, out: &renderer{o: o}}
	w := &eofWatch{ReadWriteCloser: rwc, ended: make(chan struct{})}
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(w), jsonrpc2.HandlerWithError(c.handle))
	c.conn = conn
	res, err := c.run(ctx)
	// Closing rwc ends the agent's input (it must not close the agent's
	// output): the agent shuts down, and its last frames (the updates of
	// turns it cancels) are read until its output ends.
	conn.Close()
	select {
	case <-w.ended:
	case <-ctx.Done():
	}
	c.out.finish()
	return res, err
}

// eofWatch tells when reading the agent's output ended.
type eofWatch struct {
	io.ReadWriteCloser
	ended chan struct{}
	once  sync.Once
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.ReadWriteCloser.Read(p)
	if err != nil {
		w.once.Do(func() { close(w.ended) })
	}
	return n, err
}

type client struct {
	o    Options
	conn *jsonrpc2.Conn
	out  *renderer

	mu      sync.Mutex
	session string
	refused int
	answers []string
}

// run is one headless exchange: initialize, a new or resumed session,
// the mode, one prompt (cancelled on Options.Cancel) and its result.
// It is long because it is that protocol sequence in order, each step a
// call and its check.
func (c *client) run(ctx context.Context) (Result, error) {
	var res Result
	if _, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false,
			// It answers questions also after its prompt (--wait-children):
			// children's questions are asked at once, never held for a
			// next prompt that never comes.
			"_meta": map[string]any{"acp-agent": map[string]any{"questionsBetweenPrompts": true}}},
	}); err != nil {
		return res, err
	}
	servers := c.o.MCPServers
	if len(servers) == 0 {
		servers = json.RawMessage("[]")
	}
	if c.cancelled() {
		// A signal before the session exists: nothing is created.
		res.StopReason = "cancelled"
		return c.result(res), nil
	}
	id := c.o.Resume
	if id == "" {
		raw, err := c.call(ctx, "session/new", map[string]any{"cwd": c.o.Cwd, "mcpServers": servers})
		if err != nil {
			return res, err
		}
		var created struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(raw, &created); err != nil || created.SessionID == "" {
			return res, fmt.Errorf("session/new answered no session id: %s", raw)
		}
		id = created.SessionID
	} else if _, err := c.call(ctx, "session/resume", map[string]any{"sessionId": id, "cwd": c.o.Cwd, "mcpServers": servers}); err != nil {
		return res, err
	}
	res.SessionID = id
	if c.o.Mode != "" {
		if _, err := c.call(ctx, "session/set_mode", map[string]any{"sessionId": id, "modeId": c.o.Mode}); err != nil {
			return res, err
		}
	}
	// The updates of this turn on: what session/new, a mode change and
	// the available commands announce is not part of the answer.
	c.mu.Lock()
	c.session = id
	c.mu.Unlock()
	c.out.progress("session %s", id)

	if c.o.BeforePrompt != nil {
		c.o.BeforePrompt(id)
	}
	w, err := c.conn.DispatchCall(ctx, "session/prompt", map[string]any{
		"sessionId": id,
		"prompt":    []any{map[string]any{"type": "text", "text": c.o.Prompt}},
	})
	if err != nil {
		return res, rpcError("session/prompt", err)
	}
	answered := make(chan error, 1)
	var pr struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			Limit *struct {
				Reason string `json:"reason"`
				Detail string `json:"detail"`
			} `json:"acp-agent/limit"`
		} `json:"_meta"`
	}
	go func() { answered <- w.Wait(ctx, &pr) }()
	cancelled := false
	select {
	case err = <-answered:
	case <-c.o.Cancel:
		cancelled = true
		c.out.progress("cancelling the turn")
		if nerr := c.conn.Notify(ctx, "session/cancel", map[string]any{"sessionId": id}); nerr != nil {
			return res, fmt.Errorf("session/cancel: %w", nerr)
		}
		err = <-answered
	}
	if err != nil {
		return c.result(res), rpcError("session/prompt", err)
	}
	res.StopReason = pr.StopReason
	if l := pr.Meta.Limit; l != nil {
		res.Limit, res.LimitDetail = l.Reason, l.Detail
	}
	if !cancelled && c.o.AfterTurn != nil {
		wctx, stop := context.WithCancel(ctx)
		go func() {
			select {
			case <-c.o.Cancel:
				stop()
			case <-wctx.Done():
			}
		}()
		err := c.o.AfterTurn(wctx, id)
		// Read before stop, which ends wctx too: only Cancel's end of the
		// wait makes the run "cancelled", not AfterTurn's own failure.
		waitCancelled := wctx.Err() != nil
		stop()
		switch {
		case err != nil && waitCancelled && ctx.Err() == nil:
			res.StopReason = "cancelled"
		case err != nil:
			return c.result(res), err
		}
	}
	return c.result(res), nil
}

// cancelled reports whether Options.Cancel has yielded.
func (c *client) cancelled() bool {
	select {
	case <-c.o.Cancel:
		return true
	default:
		return false
	}
}

func (c *client) result(r Result) Result {
	if c.o.Answer != nil && r.SessionID != "" {
		if text, ok := c.o.Answer(r.SessionID); ok {
			c.out.setAnswer(text)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Refused = c.refused
	r.Answers = append([]string(nil), c.answers...)
	return r
}

// handle answers the agent's requests: a permission question gets the
// --ask answer; nothing else is offered (no fs, no terminal). Session
// updates of the prompted session go to the output.
func (c *client) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	if req.Notif {
		if req.Method == "session/update" {
			c.mu.Lock()
			id := c.session
			c.mu.Unlock()
			// What the agent says while the session is set up (an MCP
			// server that could not start) comes before or after the
			// session is bound: said on stderr either way.
			c.out.setupNotice(params)
			c.out.update(id, params)
		}
		return nil, nil
	}
	if req.Method == "session/request_permission" {
		return c.permission(params), nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

func (c *client) permission(params json.RawMessage) any {
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			Kind       string `json:"kind"`
		} `json:"toolCall"`
		Meta map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p) // a malformed question is refused all the same
	option := optionRejectOnce
	class, _ := p.Meta[metaPathClass].(string)
	// --ask allow answers only what a person could answer "allow once" to
	// in the default mode: a protected path (a write under .git, an
	// agent's config) and a write outside the working directory stay the
	// person's, unless the run is in bypass mode (where protected paths do
	// not ask, and outside ones still do).
	keep := class == pathProtected || (class == pathOutside && p.ToolCall.Kind != "read" && p.ToolCall.Kind != "search")
	switch {
	case c.o.Ask == AskAllow && (!keep || c.o.Mode == "bypass"):
		option = optionAllowOnce
		c.out.progress("allowed (--ask allow): %s", p.ToolCall.Title)
	case c.o.Ask == AskAllow:
		c.mu.Lock()
		c.refused++
		c.mu.Unlock()
		c.out.refusedKept(p.ToolCall.Title, p.ToolCall.Kind, class)
	default:
		c.mu.Lock()
		c.refused++
		c.mu.Unlock()
		c.out.refused(p.ToolCall.Title, p.ToolCall.Kind)
	}
	c.mu.Lock()
	c.answers = append(c.answers, option)
	c.mu.Unlock()
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}
}

// The _meta key and values of a question about a protected or outside
// path (acp.MetaPathClass; app/headless speaks to the agent only over the
// wire, so it names them itself).
const (
	metaPathClass = "acp-agent/pathClass"
	pathProtected = "protected"
	pathOutside   = "outside"
)

func (c *client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.conn.Call(ctx, method, params, &out); err != nil {
		return nil, rpcError(method, err)
	}
	return out, nil
}

// rpcError keeps the agent's code and message of a JSON-RPC error.
func rpcError(method string, err error) error {
	var re *jsonrpc2.Error
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %w", method, err)
	}
	e := &RPCError{Method: method, Code: re.Code, Message: re.Message}
	if re.Data != nil {
		var d struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(*re.Data, &d) == nil {
			e.DataErr = d.Code
			if d.Message != "" && !strings.Contains(e.Message, d.Message) {
				e.Message += ": " + d.Message
			}
		}
	}
	return e
}

// renderer writes the output: the answer (text) or one line per update
// (jsonl), and the stderr lines.
type renderer struct {
	o  Options
	mu sync.Mutex
	// answer is the agent's current message: text since its last tool
	// call; earlier messages were progress.
	answer strings.Builder
	// fixed: the answer was read from the session (setAnswer); later
	// chunks do not change it.
	fixed bool
	// titles are the tool calls' titles by id, for the stderr lines.
	titles map[string]string
}

func (r *renderer) update(session string, params json.RawMessage) {
	var u struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			Kind string `json:"sessionUpdate"`
			// Content is a block in message chunks, a list in tool calls.
			Content    json.RawMessage `json:"content"`
			Title      string          `json:"title"`
			Status     string          `json:"status"`
			ToolCallID string          `json:"toolCallId"`
			// RawOutput is any JSON (a tool's text result is a string):
			// only an object's error code is read (errorCode).
			RawOutput json.RawMessage `json:"rawOutput"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &u) != nil || session == "" || u.SessionID != session {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Output == OutputJSONL {
		if u.Update.Kind == "available_commands_update" {
			// The session's slash commands, announced when it is bound,
			// in no fixed order with the turn: not part of the run.
			return
		}
		var line bytes.Buffer
		if json.Compact(&line, params) != nil {
			return
		}
		line.WriteByte('\n')
		r.o.Stdout.Write(line.Bytes())
		return
	}
	switch u.Update.Kind {
	case "agent_message_chunk":
		if r.fixed {
			return
		}
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(u.Update.Content, &b) == nil && b.Type == "text" {
			r.answer.WriteString(b.Text)
		}
	case "tool_call":
		if r.answer.Len() > 0 {
			r.progressLocked("%s", strings.TrimSpace(r.answer.String()))
			r.answer.Reset()
		}
		if r.titles == nil {
			r.titles = map[string]string{}
		}
		r.titles[u.Update.ToolCallID] = u.Update.Title
		r.progressLocked("tool: %s", u.Update.Title)
	case "tool_call_update":
		switch code := errorCode(u.Update.RawOutput); {
		case code == "RULE_DENIES" || code == "MODE_FORBIDS":
			fmt.Fprintf(r.o.Stderr, "acp-agent: refused (%s): %s\n", code, r.callName(u.Update.ToolCallID))
		case u.Update.Status == "failed":
			r.progressLocked("failed: %s", r.callName(u.Update.ToolCallID))
		}
	}
}

// errorCode is the error code of a failed call's raw output
// ({"error": {"code": …}}); "" for any other shape.
func errorCode(raw json.RawMessage) string {
	var out struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &out) != nil {
		return ""
	}
	return out.Error.Code
}

// The _meta notice key and the kind of the message saying an MCP server
// could not start (acp.MetaNotice, acp.NoticeMCPServerFailed; named here
// as headless speaks to the agent over the wire only).
const (
	metaNotice            = "acp-agent/notice"
	noticeMCPServerFailed = "mcp-server-failed"
)

// setupNotice writes the message saying an MCP server could not start on
// stderr, one line.
func (r *renderer) setupNotice(params json.RawMessage) {
	var u struct {
		Update struct {
			Kind    string `json:"sessionUpdate"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Meta map[string]struct {
				Kind string `json:"kind"`
			} `json:"_meta"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &u) != nil || u.Update.Meta[metaNotice].Kind != noticeMCPServerFailed || u.Update.Content.Type != "text" {
		return
	}
	text := strings.Join(strings.Fields(u.Update.Content.Text), " ")
	if text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.o.Stderr, "acp-agent: %s\n", text)
}

// callName is a tool call's title, else its id.
func (r *renderer) callName(id string) string {
	if t := r.titles[id]; t != "" {
		return t
	}
	return "tool call " + id
}

// refused reports a permission question answered no.
func (r *renderer) refused(title, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Output == OutputJSONL {
		// The tool_call_update that follows carries the refusal
		// (rawOutput.error.code PERMISSION_REJECTED).
		return
	}
	fmt.Fprintf(r.o.Stderr, "acp-agent: refused: %s (%s): no mode or settings rule allows it and --ask is deny\n", title, kind)
}

// refusedKept reports a question --ask allow does not answer yes: a
// protected path, or a write outside the working directory.
func (r *renderer) refusedKept(title, kind, class string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Output == OutputJSONL {
		return
	}
	what := "a protected path (a write there can run code or grant rights)"
	if class == pathOutside {
		what = "a write outside the working directory"
	}
	fmt.Fprintf(r.o.Stderr, "acp-agent: refused: %s (%s): it is %s; --ask allow answers only what a person could allow once in the default mode (use --mode bypass to allow it)\n", title, kind, what)
}

func (r *renderer) progress(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progressLocked(format, args...)
}

func (r *renderer) progressLocked(format string, args ...any) {
	if r.o.Progress {
		fmt.Fprintf(r.o.Stderr, "· "+format+"\n", args...)
	}
}

// setAnswer replaces the streamed answer.
func (r *renderer) setAnswer(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer.Reset()
	r.answer.WriteString(text)
	r.fixed = true
}

// finish prints the answer (text mode).
func (r *renderer) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.o.Output != OutputText || r.answer.Len() == 0 {
		return
	}
	s := r.answer.String()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(r.o.Stdout, s)
	r.answer.Reset()
}
