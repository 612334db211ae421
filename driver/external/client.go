package external

// This file is the client side the external agent talks to: its
// session/update notifications become the child's turn, its permission
// questions go to the child's gate, its fs/* and terminal/* requests are
// served by the child's workspace inside its boundary.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// client is the acp.Client of one process.
type client struct {
	p *proc
}

var _ acp.Client = (*client)(nil)

// SessionUpdate folds an update of the child's external session into its
// turn. It runs on the SDK's notification goroutine: it never blocks.
func (cl *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	cl.p.child().onUpdate(cl.p, n)
	return nil
}

// env is the child's workspace.
func (cl *client) env(ctx context.Context) (workspace.Env, error) {
	if cl.p.child().opts.Workspace == nil {
		return workspace.Env{}, acp.NewInternalError(map[string]any{"error": "no workspace is available to this agent"})
	}
	return cl.p.child().opts.Workspace.Env(ctx, cl.p.child().sess.ID())
}

// RequestPermission asks the child's gate (the person, as this child's
// question) and answers with the option that matches: allowed → an allow
// option, refused → a reject option, cancelled (or the turn was
// cancelled) → cancelled.
func (cl *client) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	defer cl.p.active()()
	cancelled := acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	t := cl.p.child().liveTurn(cl.p)
	if t == nil || t.isCancelled() {
		// After session/cancel every question is answered cancelled
		// (ACP prompt-turn cancellation): the person is not asked.
		return cancelled, nil
	}
	tctx, stop := t.scope(ctx)
	defer stop()
	cl.p.child().awaitShown(tctx, t, string(req.ToolCall.ToolCallId))
	if t.isCancelled() {
		return cancelled, nil
	}
	env, err := cl.env(tctx)
	if err != nil {
		return cancelled, nil
	}
	preq := cl.p.child().permissionRequest(env.Cwd, req.ToolCall)
	err = workspace.Authorize(tctx, env.Permissions, preq)
	if t.isCancelled() || tctx.Err() != nil {
		return cancelled, nil
	}
	var te *tool.Error
	switch {
	case err == nil:
		cl.p.child().grant(t, env.Cwd, preq, req.ToolCall)
		if id, ok := option(req.Options, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways); ok {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(id)}, nil
		}
	case errors.As(err, &te) && te.Code == workspace.CodePermissionCancelled:
	default:
		if id, ok := option(req.Options, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways); ok {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(id)}, nil
		}
	}
	return cancelled, nil
}

// option is the id of the first option of the first kind present.
func option(opts []acp.PermissionOption, kinds ...acp.PermissionOptionKind) (acp.PermissionOptionId, bool) {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

// wsKind maps an ACP tool kind to the gate's.
func wsKind(k acp.ToolKind) string {
	switch k {
	case acp.ToolKindRead:
		return workspace.KindRead
	case acp.ToolKindSearch:
		return workspace.KindSearch
	case acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove:
		return workspace.KindEdit
	case acp.ToolKindExecute:
		return workspace.KindExecute
	}
	return workspace.KindOther
}

// permissionRequest is the gate's request for the agent's question
// about call: its kind, its title, what it touches.
func (c *Child) permissionRequest(cwd string, call acp.ToolCallUpdate) workspace.PermissionRequest {
	c.mu.Lock()
	var known *toolState
	if c.turn != nil {
		known = c.turn.tools[string(call.ToolCallId)]
	}
	kind, title := acp.ToolKindOther, ""
	var locs []acp.ToolCallLocation
	var raw any
	if known != nil {
		kind, title, locs, raw = known.kind, known.title, known.locations, known.rawInput
	}
	c.mu.Unlock()
	if call.Kind != nil {
		kind = *call.Kind
	}
	if call.Title != nil {
		title = *call.Title
	}
	if call.Locations != nil {
		locs = call.Locations
	}
	if call.RawInput != nil {
		raw = call.RawInput
	}
	req := workspace.PermissionRequest{
		CallID: string(call.ToolCallId), Tool: c.cmd.Name, Kind: wsKind(kind), Title: title,
		Display: displayOf(call.Content, locs),
	}
	switch req.Kind {
	case workspace.KindExecute:
		req.Subject = commandOf(raw, title)
		req.Detail = "```sh\n" + req.Subject + "\n```"
	case workspace.KindEdit, workspace.KindRead, workspace.KindSearch:
		if len(locs) > 0 {
			if p, err := workspace.ResolvePath(cwd, locs[0].Path); err == nil {
				req.Subject, req.OutsideCwd = workspace.DisplayPath(cwd, p.Abs), p.OutsideCwd
				req.Resolved = workspace.DisplayPath(p.RealCwd, p.Real)
			}
		}
	}
	if req.Title == "" {
		req.Title = req.Subject
	}
	return req
}

// commandOf is the command line a call runs: rawInput.command (a string
// or a list of words) when the agent gave one, else its title.
func commandOf(raw any, title string) string {
	if m, ok := raw.(map[string]any); ok {
		switch v := m["command"].(type) {
		case string:
			return v
		case []any:
			var words []string
			for _, w := range v {
				s, ok := w.(string)
				if !ok {
					return title
				}
				words = append(words, s)
			}
			if len(words) > 0 {
				return (&agentdef.External{Command: words[0], Args: words[1:]}).CommandLine()
			}
		}
	}
	return title
}

// grant remembers, for the rest of the turn, that the person allowed the
// edit of the paths an allowed question named: the agent's own
// fs/write_text_file of them is then not asked again.
func (c *Child) grant(t *turn, cwd string, req workspace.PermissionRequest, call acp.ToolCallUpdate) {
	if req.Kind != workspace.KindEdit || req.Display == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range req.Display.Locations {
		if p, err := workspace.ResolvePath(cwd, l.Path); err == nil {
			t.granted[p.Abs] = true
		}
	}
}

// granted reports (and uses up) a grant of the turn for abs.
func (c *Child) granted(t *turn, abs string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t == nil || !t.granted[abs] {
		return false
	}
	delete(t.granted, abs)
	return true
}

// ReadTextFile reads through the child's workspace: a path outside its
// cwd asks the gate first; a file the settings deny is refused.
func (cl *client) ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	defer cl.p.active()()
	env, err := cl.env(ctx)
	if err != nil {
		return acp.ReadTextFileResponse{}, err
	}
	p, err := workspace.ResolvePath(env.Cwd, req.Path)
	if err != nil {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	shown := workspace.DisplayPath(env.Cwd, p.Abs)
	if workspace.ReadDenied(env.Permissions, "read", workspace.KindRead, shown) {
		return acp.ReadTextFileResponse{}, refused(fmt.Errorf("reading %s is denied by the settings", shown))
	}
	if p.OutsideCwd {
		if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
			Tool: "read", Kind: workspace.KindRead, Title: "Read " + shown, Subject: shown, OutsideCwd: true,
			Display: &session.ToolDisplay{Locations: []session.ToolLocation{{Path: p.Abs}}},
		}); err != nil {
			return acp.ReadTextFileResponse{}, refused(err)
		}
	}
	line, limit := 0, 0
	if req.Line != nil {
		line = *req.Line
	}
	if req.Limit != nil {
		limit = *req.Limit
	}
	text, err := workspace.ReadFile(ctx, env.Files, p, line, limit)
	if err != nil {
		if workspace.IsNotExist(err) {
			return acp.ReadTextFileResponse{}, &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"path": req.Path}}
		}
		return acp.ReadTextFileResponse{}, refused(err)
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile writes through the child's workspace and gate (unless
// the person allowed this edit in answer to the agent's own question).
func (cl *client) WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	defer cl.p.active()()
	env, err := cl.env(ctx)
	if err != nil {
		return acp.WriteTextFileResponse{}, err
	}
	p, err := workspace.ResolvePath(env.Cwd, req.Path)
	if err != nil {
		return acp.WriteTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	shown := workspace.DisplayPath(env.Cwd, p.Abs)
	if p.OutsideCwd || !cl.p.child().granted(cl.p.child().liveTurn(cl.p), p.Abs) {
		if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
			Tool: "write", Kind: workspace.KindEdit, Title: "Write " + shown, Subject: shown,
			Resolved: workspace.DisplayPath(p.RealCwd, p.Real), OutsideCwd: p.OutsideCwd,
			Display: &session.ToolDisplay{Locations: []session.ToolLocation{{Path: p.Abs}}},
		}); err != nil {
			return acp.WriteTextFileResponse{}, refused(err)
		}
	}
	if err := workspace.WriteFile(ctx, env.Files, p, req.Content); err != nil {
		return acp.WriteTextFileResponse{}, refused(err)
	}
	return acp.WriteTextFileResponse{}, nil
}

// refused is the agent-facing error of a refused or failed request: the
// message says why (a tool.Error's code is kept in data).
func refused(err error) error {
	data := map[string]any{"error": err.Error()}
	var te *tool.Error
	if errors.As(err, &te) {
		data["code"] = te.Code
	}
	return &acp.RequestError{Code: -32603, Message: err.Error(), Data: data}
}

// terminals are the commands the agent runs through terminal/*, each on a
// goroutine of the process (proc.wg) running the child's workspace
// commands.
type terminals struct {
	mu   sync.Mutex
	next int
	byID map[string]*terminal
}

type terminal struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    workspace.CommandResult
	err    error
	// live is the output so far of a command that streams it
	// (workspace.Command.OnOutput): terminal/output returns it before the
	// command ends.
	live liveOutput
}

// liveOutput keeps the last limit bytes of a running command's output
// (0: DefaultTerminalOutput).
type liveOutput struct {
	mu        sync.Mutex
	limit     int
	buf       []byte
	truncated bool
}

// DefaultTerminalOutput bounds a terminal's output when the agent set no
// outputByteLimit.
const DefaultTerminalOutput = 1 << 20

func (o *liveOutput) write(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	limit := o.limit
	if limit <= 0 {
		limit = DefaultTerminalOutput
	}
	o.buf = append(o.buf, p...)
	if over := len(o.buf) - limit; over > 0 {
		o.truncated = true
		o.buf = append(o.buf[:0], o.buf[over:]...)
	}
}

// snapshot is the output so far, starting at a rune boundary when its
// head was cut.
func (o *liveOutput) snapshot() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.buf
	if o.truncated {
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b), o.truncated
}

func (ts *terminals) killAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.byID {
		t.cancel()
	}
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	if !ok {
		return nil, &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"terminalId": id}}
	}
	return t, nil
}

// CreateTerminal asks the gate for the command line (exactly what runs)
// and runs it with the child's workspace commands in its cwd.
func (cl *client) CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	defer cl.p.active()()
	env, err := cl.env(ctx)
	if err != nil {
		return acp.CreateTerminalResponse{}, err
	}
	line := req.Command
	if len(req.Args) > 0 {
		line = (&agentdef.External{Command: req.Command, Args: req.Args}).CommandLine()
	}
	for _, v := range req.Env {
		line = v.Name + "=" + shellWord(v.Value) + " " + line
	}
	cwd := env.Cwd
	outside := false
	if req.Cwd != nil && *req.Cwd != "" {
		p, err := workspace.ResolvePath(env.Cwd, *req.Cwd)
		if err != nil {
			return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
		}
		cwd, outside = p.Abs, p.OutsideCwd
	}
	if env.Commands == nil {
		return acp.CreateTerminalResponse{}, refused(errors.New("no commands can run in this workspace"))
	}
	sandboxed := workspace.SandboxOf(env.Commands, cwd) != ""
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		Tool: "bash", Kind: workspace.KindExecute, Title: line, Subject: line, OutsideCwd: outside,
		Detail: "```sh\n" + line + "\n```", Sandboxed: sandboxed,
		SandboxKeepsProtected: workspace.SandboxKeepsProtected(env.Commands, cwd),
	}); err != nil {
		return acp.CreateTerminalResponse{}, refused(err)
	}
	limit := 0
	if req.OutputByteLimit != nil {
		limit = *req.OutputByteLimit
	}
	ts := &cl.p.terms
	ts.mu.Lock()
	ts.next++
	id := fmt.Sprintf("term-%d", ts.next)
	tctx, cancel := context.WithCancel(cl.p.life)
	t := &terminal{cancel: cancel, done: make(chan struct{})}
	t.live.limit = limit
	ts.byID[id] = t
	ts.mu.Unlock()
	cl.p.wg.Add(1)
	go func() {
		defer cl.p.wg.Done()
		defer close(t.done)
		t.res, t.err = env.Commands.Run(tctx, workspace.Command{Command: line, Cwd: cwd, OutputLimit: limit, OnOutput: t.live.write}, nil)
	}()
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

func shellWord(s string) string {
	q := (&agentdef.External{Command: s}).CommandLine()
	if q == "" {
		return "''"
	}
	return q
}

func exitOf(t *terminal) (code *int, signal *string) {
	if t.res.ExitCode != nil {
		code = t.res.ExitCode
	}
	if t.res.Signal != "" {
		s := t.res.Signal
		signal = &s
	}
	if code == nil && signal == nil {
		one := 1
		code = &one
	}
	return code, signal
}

// TerminalOutput returns the command's output: all of it once it ended,
// else what it printed so far (a local command streams it; a command in
// the editor's terminal shows there, and is read here when it exits).
func (cl *client) TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	t, err := cl.p.terms.get(req.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	select {
	case <-t.done:
		code, sig := exitOf(t)
		out := t.res.Output
		if t.err != nil && out == "" {
			out = t.err.Error()
		}
		return acp.TerminalOutputResponse{Output: out, Truncated: t.res.Truncated, ExitStatus: &acp.TerminalExitStatus{ExitCode: code, Signal: sig}}, nil
	default:
		out, truncated := t.live.snapshot()
		return acp.TerminalOutputResponse{Output: out, Truncated: truncated}, nil
	}
}

// WaitForTerminalExit waits for the command (the time is not counted
// against the agent by the hang watchdog).
func (cl *client) WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	defer cl.p.active()()
	t, err := cl.p.terms.get(req.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, ctx.Err()
	}
	code, sig := exitOf(t)
	return acp.WaitForTerminalExitResponse{ExitCode: code, Signal: sig}, nil
}

// KillTerminal stops the command and keeps its output.
func (cl *client) KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	t, err := cl.p.terms.get(req.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	t.cancel()
	<-t.done
	return acp.KillTerminalResponse{}, nil
}

// ReleaseTerminal stops the command and forgets it.
func (cl *client) ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	t, err := cl.p.terms.get(req.TerminalId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	t.cancel()
	<-t.done
	cl.p.terms.mu.Lock()
	delete(cl.p.terms.byID, req.TerminalId)
	cl.p.terms.mu.Unlock()
	return acp.ReleaseTerminalResponse{}, nil
}

// displayOf is what a call shows: its locations and diffs.
func displayOf(content []acp.ToolCallContent, locs []acp.ToolCallLocation) *session.ToolDisplay {
	d := &session.ToolDisplay{}
	for _, l := range locs {
		line := 0
		if l.Line != nil {
			line = *l.Line
		}
		d.Locations = append(d.Locations, session.ToolLocation{Path: l.Path, Line: line})
	}
	for _, c := range content {
		if c.Diff != nil {
			d.Diffs = append(d.Diffs, session.ToolDiff{Path: c.Diff.Path, OldText: c.Diff.OldText, NewText: c.Diff.NewText})
		}
	}
	if len(d.Locations) == 0 && len(d.Diffs) == 0 {
		return nil
	}
	return d
}

// textOf is the text of a call's content (text blocks; diffs summarized).
func textOf(content []acp.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Content != nil:
			if s := blockText(c.Content.Content); s != "" {
				parts = append(parts, s)
			}
		case c.Diff != nil:
			parts = append(parts, "Edited "+filepath.Base(c.Diff.Path)+" ("+c.Diff.Path+")")
		case c.Terminal != nil:
			parts = append(parts, "Terminal "+c.Terminal.TerminalId)
		}
	}
	return strings.Join(parts, "\n")
}

// blockText renders a content block as text.
func blockText(b acp.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return b.ResourceLink.Uri
	case b.Resource != nil:
		if b.Resource.Resource.TextResourceContents != nil {
			return b.Resource.Resource.TextResourceContents.Text
		}
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	}
	return ""
}
