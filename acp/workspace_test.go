package acp_test

// This file tests the workspace of sessions over the real ACP connection:
// files and commands through a client that advertises fs and terminal and
// through one that does not (the local implementations), the permission
// gate (every option, cancel while asking, outside-cwd), session modes, and
// the rendering of tool displays (diff, terminal, locations).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// resolverRef lets test tools reach the App's resolver, which exists only
// once the App is built (after the tools).
type resolverRef struct {
	mu sync.Mutex
	r  workspace.Resolver
}

func (r *resolverRef) Env(ctx context.Context, id string) (workspace.Env, error) {
	r.mu.Lock()
	res := r.r
	r.mu.Unlock()
	if res == nil {
		return workspace.Env{}, errors.New("no resolver")
	}
	return res.Env(ctx, id)
}

// writeTool is a minimal "write" workspace tool: it shows the diff, asks
// permission (kind edit) and writes through the session's Files.
type writeTool struct{ ws workspace.Resolver }

func (writeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "ws_write", Description: "write a file", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (writeTool) Kind() string { return workspace.KindEdit }
func (writeTool) Locations(args json.RawMessage) []session.ToolLocation {
	var p struct{ Path string }
	if json.Unmarshal(args, &p) != nil || p.Path == "" {
		return nil
	}
	return []session.ToolLocation{{Path: p.Path}}
}
func (w writeTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var p struct{ Path, Content string }
	if err := json.Unmarshal(inv.Arguments, &p); err != nil {
		return tool.Result{}, err
	}
	env, err := workspace.EnvFor(ctx, w.ws, inv)
	if err != nil {
		return tool.Result{}, err
	}
	path, err := workspace.ResolvePath(env.Cwd, p.Path)
	if err != nil {
		return tool.Result{}, err
	}
	var old *string
	if s, err := env.Files.ReadTextFile(ctx, path.Abs, 0, 0); err == nil {
		old = &s
	} else if !workspace.IsNotExist(err) {
		return tool.Result{}, err
	}
	display := &session.ToolDisplay{
		Locations: []session.ToolLocation{{Path: path.Abs}},
		Diffs:     []session.ToolDiff{{Path: path.Abs, OldText: old, NewText: p.Content}},
	}
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: "ws_write", Kind: workspace.KindEdit, Title: "Write " + p.Path,
		Display: display, OutsideCwd: path.OutsideCwd,
	}); err != nil {
		return tool.Result{}, err
	}
	if err := env.Files.WriteTextFile(ctx, path.Abs, p.Content); err != nil {
		return tool.Result{}, err
	}
	res := tool.TextResult("wrote "+p.Path, nil)
	res.Display = display
	return res, nil
}

// bashTool is a minimal "bash" workspace tool: permission (kind execute),
// then the session's Commands, embedding the terminal as soon as it exists.
type bashTool struct{ ws workspace.Resolver }

func (bashTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: "ws_bash", Description: "run a command", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (bashTool) Kind() string { return workspace.KindExecute }
func (b bashTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var p struct{ Command string }
	if err := json.Unmarshal(inv.Arguments, &p); err != nil {
		return tool.Result{}, err
	}
	env, err := workspace.EnvFor(ctx, b.ws, inv)
	if err != nil {
		return tool.Result{}, err
	}
	if err := workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: "ws_bash", Kind: workspace.KindExecute, Title: p.Command,
	}); err != nil {
		return tool.Result{}, err
	}
	res, err := env.Commands.Run(ctx, workspace.Command{CallID: inv.CallID, Command: p.Command, Cwd: env.Cwd}, func(d session.ToolDisplay) {
		if inv.Progress != nil {
			inv.Progress(tool.Progress{Display: &d})
		}
	})
	if err != nil {
		return tool.Result{}, err
	}
	out := tool.TextResult(res.Output, nil)
	if res.TerminalID != "" {
		out.Display = &session.ToolDisplay{TerminalID: res.TerminalID}
	}
	return out, nil
}

// wsClient is a test client with optional fs and terminal support (on the
// real disk, commands run locally) and scripted permission answers.
type wsClient struct {
	*recorder
	fs, terminal bool

	mu      sync.Mutex
	answers []string // option ids; "cancel" answers cancelled; "hang" waits for the request's cancellation
	asked   []acpsdk.RequestPermissionRequest
	askedCh chan struct{}
	reads   int
	writes  int
	terms   map[string]*testTerminal
	termN   int
	// hangEnded: a "hang" request saw its cancellation ($/cancel_request).
	hangEnded chan struct{}
	// onAsk, when set, runs while a permission request is pending.
	onAsk func(acpsdk.RequestPermissionRequest)
	// missingCode, when set, is the code answered for a missing file
	// instead of -32002 (acpx answers -32603); failPath, when set, is an
	// existing file whose read fails with missingCode.
	missingCode int
	failPath    string
}

func newWSClient(fs, terminal bool, answers ...string) *wsClient {
	return &wsClient{recorder: newRecorder(), fs: fs, terminal: terminal, answers: answers,
		askedCh: make(chan struct{}, 16), hangEnded: make(chan struct{}, 16), terms: map[string]*testTerminal{}}
}

func (c *wsClient) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, p)
	ans := "reject-once"
	if len(c.answers) > 0 {
		ans, c.answers = c.answers[0], c.answers[1:]
	}
	onAsk := c.onAsk
	c.mu.Unlock()
	if onAsk != nil {
		onAsk(p)
	}
	c.askedCh <- struct{}{}
	if kind, ok := strings.CutPrefix(ans, "avante:"); ok {
		// avante.nvim's buttons pick the option whose id equals the kind
		// name; finding none, its answer falls to a rejection.
		ans = ""
		for _, o := range p.Options {
			if string(o.OptionId) == kind {
				ans = string(o.OptionId)
			}
		}
		if ans == "" {
			for _, o := range p.Options {
				if o.Kind == acpsdk.PermissionOptionKindRejectOnce {
					ans = string(o.OptionId)
				}
			}
		}
	}
	switch ans {
	case "cancel":
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	case "hang":
		<-ctx.Done()
		c.hangEnded <- struct{}{}
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(ans))}, nil
}

func (c *wsClient) requests() []acpsdk.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

func (c *wsClient) ReadTextFile(ctx context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	if !c.fs {
		return c.recorder.ReadTextFile(ctx, p)
	}
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	if c.failPath != "" && p.Path == c.failPath {
		return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: c.missingCode, Message: "Internal error"}
	}
	b, err := os.ReadFile(p.Path)
	if errors.Is(err, os.ErrNotExist) {
		if c.missingCode != 0 {
			return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: c.missingCode, Message: "Internal error: ENOENT"}
		}
		return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: -32002, Message: "Resource not found"}
	}
	if err != nil {
		return acpsdk.ReadTextFileResponse{}, err
	}
	return acpsdk.ReadTextFileResponse{Content: string(b)}, nil
}

func (c *wsClient) WriteTextFile(ctx context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	if !c.fs {
		return c.recorder.WriteTextFile(ctx, p)
	}
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return acpsdk.WriteTextFileResponse{}, os.WriteFile(p.Path, []byte(p.Content), 0o644)
}

// testTerminal is a command the test client runs for terminal/create.
type testTerminal struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	mu   sync.Mutex
	done chan struct{}
}

type lockedBuf struct{ t *testTerminal }

func (w lockedBuf) Write(p []byte) (int, error) {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	return w.t.out.Write(p)
}

func (c *wsClient) CreateTerminal(ctx context.Context, p acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	if !c.terminal {
		return c.recorder.CreateTerminal(ctx, p)
	}
	t := &testTerminal{done: make(chan struct{})}
	t.cmd = exec.Command(p.Command, p.Args...)
	if p.Cwd != nil {
		t.cmd.Dir = *p.Cwd
	}
	t.cmd.Stdout, t.cmd.Stderr = lockedBuf{t}, lockedBuf{t}
	if err := t.cmd.Start(); err != nil {
		return acpsdk.CreateTerminalResponse{}, err
	}
	go func() { _ = t.cmd.Wait(); close(t.done) }()
	c.mu.Lock()
	c.termN++
	id := fmt.Sprintf("term-%d", c.termN)
	c.terms[id] = t
	c.mu.Unlock()
	return acpsdk.CreateTerminalResponse{TerminalId: id}, nil
}

func (c *wsClient) term(id string) (*testTerminal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.terms[id]
	if !ok {
		return nil, fmt.Errorf("unknown terminal %s", id)
	}
	return t, nil
}

func (c *wsClient) WaitForTerminalExit(ctx context.Context, p acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return acpsdk.WaitForTerminalExitResponse{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return acpsdk.WaitForTerminalExitResponse{}, ctx.Err()
	}
	code := t.cmd.ProcessState.ExitCode()
	return acpsdk.WaitForTerminalExitResponse{ExitCode: &code}, nil
}

func (c *wsClient) TerminalOutput(ctx context.Context, p acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return acpsdk.TerminalOutputResponse{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return acpsdk.TerminalOutputResponse{Output: t.out.String()}, nil
}

func (c *wsClient) KillTerminal(ctx context.Context, p acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return acpsdk.KillTerminalResponse{}, err
	}
	_ = t.cmd.Process.Kill()
	return acpsdk.KillTerminalResponse{}, nil
}

func (c *wsClient) ReleaseTerminal(ctx context.Context, p acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	t, err := c.term(p.TerminalId)
	if err != nil {
		return acpsdk.ReleaseTerminalResponse{}, err
	}
	_ = t.cmd.Process.Kill()
	<-t.done
	c.mu.Lock()
	delete(c.terms, p.TerminalId)
	c.mu.Unlock()
	return acpsdk.ReleaseTerminalResponse{}, nil
}

// wireTap records the agent's outgoing lines in order.
type wireTap struct {
	r  io.Reader
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *wireTap) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	w.b.Write(p[:n])
	w.mu.Unlock()
	return n, err
}

func (w *wireTap) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(w.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// wsEnv is an App served to a wsClient, with the workspace test tools.
type wsEnv struct {
	*env
	client *wsClient
	tap    *wireTap
}

// startWS serves a composition with the ws_write and ws_bash tools to c.
func startWS(t testing.TB, m model.Model, c *wsClient, configure ...func(*app.Config, workspace.Resolver)) *wsEnv {
	t.Helper()
	ref := &resolverRef{}
	cfg := app.Config{
		DataDir: t.TempDir(),
		Tools:   []tool.Tool{writeTool{ref}, bashTool{ref}},
		Version: "test",
		Logger:  testLogger(t),
		Testing: &testhooks.Hooks{Model: m, NoSync: true, PanicOnBug: true},
	}
	for _, f := range configure {
		f(&cfg, ref)
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	ref.mu.Lock()
	ref.r = a.Workspace()
	ref.mu.Unlock()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	e := &env{t: t, app: a, rec: c.recorder, c2aW: c2aW, a2cW: a2cW, done: make(chan error, 1)}
	go func() { e.done <- a.Serve(context.Background(), c2aR, a2cW) }()
	tap := &wireTap{r: a2cR}
	e.cs = acpsdk.NewClientSideConnection(c, c2aW, tap)
	t.Cleanup(e.stop)
	ctx := ctxFor(t)
	if _, err := e.cs.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: c.fs, WriteTextFile: c.fs},
			Terminal: c.terminal,
		},
	}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &wsEnv{env: e, client: c, tap: tap}
}

// writeScript makes the model write path with content, then finish.
func writeScript(calls ...string) string {
	var b strings.Builder
	b.WriteString("model:\n  main:\n")
	for i, args := range calls {
		fmt.Fprintf(&b, "    - tool_calls:\n        - id: call-%d\n          name: %s\n          arguments: '%s'\n", i+1, toolOf(args), args)
	}
	b.WriteString("    - text: done\n")
	return b.String()
}

func toolOf(args string) string {
	if strings.Contains(args, `"command"`) {
		return "ws_bash"
	}
	return "ws_write"
}

// toolResults returns the final tool_call_update of each call, by id.
func toolResults(ns []acpsdk.SessionNotification) map[string]*acpsdk.SessionToolCallUpdate {
	out := map[string]*acpsdk.SessionToolCallUpdate{}
	for _, n := range ns {
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil && *u.Status != acpsdk.ToolCallStatusInProgress {
			out[string(u.ToolCallId)] = u
		}
	}
	return out
}

func TestWorkspaceFilesSameThroughClientAndLocally(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fs, terminal bool
	}{
		{"client fs and terminal", true, true},
		{"local", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			script := writeScript(`{"path":"a.txt","content":"one\ntwo\n"}`, `{"path":"a.txt","content":"one\n2\n"}`,
				`{"command":"cat a.txt; echo bye"}`)
			c := newWSClient(tc.fs, tc.terminal, "allow-always", "allow-once")
			e := startWS(t, loadScript(t, script), c)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			r, err := e.prompt(ctx, id, "write")
			if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt = %v, %v", r, err)
			}
			got, err := os.ReadFile(filepath.Join(cwd, "a.txt"))
			if err != nil || string(got) != "one\n2\n" {
				t.Fatalf("a.txt = %q, %v", got, err)
			}
			c.mu.Lock()
			reads, writes := c.reads, c.writes
			c.mu.Unlock()
			if tc.fs && (reads != 2 || writes != 2) || !tc.fs && (reads != 0 || writes != 0) {
				t.Errorf("client fs calls: %d reads, %d writes", reads, writes)
			}
			res := toolResults(e.rec.snapshot(id))
			// The second write shows the diff from the first content.
			d := res["call-2"].Content[0].Diff
			if d == nil || d.OldText == nil || *d.OldText != "one\ntwo\n" || d.NewText != "one\n2\n" || d.Path != filepath.Join(cwd, "a.txt") {
				t.Errorf("call-2 diff = %+v", d)
			}
			if d := res["call-1"].Content[0].Diff; d == nil || d.OldText != nil {
				t.Errorf("call-1 (new file) diff = %+v", d)
			}
			if locs := res["call-1"].Locations; len(locs) != 1 || locs[0].Path != filepath.Join(cwd, "a.txt") {
				t.Errorf("call-1 locations = %+v", locs)
			}
			bash := res["call-3"]
			var texts []string
			var term string
			for _, c := range bash.Content {
				if c.Terminal != nil {
					term = c.Terminal.TerminalId
				}
				if c.Content != nil && c.Content.Content.Text != nil {
					texts = append(texts, c.Content.Content.Text.Text)
				}
			}
			if !slices.Contains(texts, "one\n2\nbye\n") {
				t.Errorf("bash output = %q", texts)
			}
			if tc.terminal != (term != "") {
				t.Errorf("terminal embedded = %q, client terminal %v", term, tc.terminal)
			}
			if tc.terminal {
				// Embedded at once (progress), before the result.
				var early bool
				for _, n := range e.rec.snapshot(id) {
					if u := n.Update.ToolCallUpdate; u != nil && u.ToolCallId == "call-3" && u.Status != nil && *u.Status == acpsdk.ToolCallStatusInProgress &&
						len(u.Content) > 0 && u.Content[0].Terminal != nil {
						early = true
					}
				}
				if !early {
					t.Errorf("terminal not embedded while running")
				}
			}
			// allow-always remembered edits: only the first write and
			// the command asked.
			if n := len(c.requests()); n != 2 {
				t.Errorf("permission requests = %d, want 2", n)
			}
		})
	}
}

// A client that answers fs/read_text_file of a missing file with -32603
// (acpx does) instead of -32002: a write of a new file still works, because
// the path does not exist locally either; a read of a file that does exist
// and fails in the client stays a failure.
func TestClientReadMissingFileAnyCode(t *testing.T) {
	ctx := ctxFor(t)
	script := writeScript(`{"path":"new.txt","content":"fresh\n"}`, `{"path":"old.txt","content":"x\n"}`)
	c := newWSClient(true, false, "allow-always")
	c.missingCode = -32603
	e := startWS(t, loadScript(t, script), c)
	cwd := tempCwd(t)
	if err := os.WriteFile(filepath.Join(cwd, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.failPath = filepath.Join(cwd, "old.txt")
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, "write"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	if got, err := os.ReadFile(filepath.Join(cwd, "new.txt")); err != nil || string(got) != "fresh\n" {
		t.Errorf("new.txt = %q, %v; want the write of a new file to succeed", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(cwd, "old.txt")); string(got) != "old\n" {
		t.Errorf("old.txt = %q, want untouched (the client's read failed)", got)
	}
	res := toolResults(e.rec.snapshot(id))
	if r := res["call-1"]; r.Status == nil || *r.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("call-1 (new file) status = %v, want completed", r.Status)
	}
	if r := res["call-2"]; r.Status == nil || *r.Status != acpsdk.ToolCallStatusFailed {
		t.Errorf("call-2 (existing file, failed read) status = %v, want failed", r.Status)
	}
}

func TestToolCallStartCarriesKindAndLocations(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, writeScript(`{"path":"sub/x.go","content":"package x\n"}`)), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	var start *acpsdk.SessionUpdateToolCall
	for _, n := range e.rec.snapshot(id) {
		if n.Update.ToolCall != nil {
			start = n.Update.ToolCall
		}
	}
	if start == nil || start.Kind != acpsdk.ToolKindEdit || len(start.Locations) != 1 || start.Locations[0].Path != filepath.Join(cwd, "sub/x.go") {
		t.Fatalf("tool_call = %+v", start)
	}
}

func TestPermissionOutcomes(t *testing.T) {
	write := `{"path":"f.txt","content":"x"}`
	for _, tc := range []struct {
		name    string
		answers []string
		calls   int    // writes attempted
		asks    int    // permission requests expected
		written bool   // the file exists afterwards
		code    string // error code of the last call, "" for success
	}{
		{"allow once asks each time", []string{"allow_once", "allow_once"}, 2, 2, true, ""},
		{"allow always remembers", []string{"allow_always"}, 2, 1, true, ""},
		{"reject once", []string{"reject_once", "reject_once"}, 2, 2, false, workspace.CodePermissionRejected},
		{"reject always remembers", []string{"reject_always"}, 2, 1, false, workspace.CodePermissionRejected},
		// The ids offered before they equalled their kind are still
		// understood.
		{"legacy allow once", []string{"allow-once", "allow-once"}, 2, 2, true, ""},
		{"legacy allow always", []string{"allow-always"}, 2, 1, true, ""},
		{"legacy reject once", []string{"reject-once", "reject-once"}, 2, 2, false, workspace.CodePermissionRejected},
		{"legacy reject always", []string{"reject-always"}, 2, 1, false, workspace.CodePermissionRejected},
		// avante.nvim matches ids against kind names.
		{"avante allow once", []string{"avante:allow_once", "avante:allow_once"}, 2, 2, true, ""},
		{"avante allow always", []string{"avante:allow_always"}, 2, 1, true, ""},
		{"avante reject once", []string{"avante:reject_once", "avante:reject_once"}, 2, 2, false, workspace.CodePermissionRejected},
		{"cancelled outcome", []string{"cancel"}, 1, 1, false, workspace.CodePermissionCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			calls := slices.Repeat([]string{write}, tc.calls)
			c := newWSClient(false, false, tc.answers...)
			e := startWS(t, loadScript(t, writeScript(calls...)), c)
			cwd := tempCwd(t)
			id := e.newSession(ctx, cwd)
			if _, err := e.prompt(ctx, id, "go"); err != nil {
				t.Fatal(err)
			}
			reqs := c.requests()
			if len(reqs) != tc.asks {
				t.Fatalf("asked %d times, want %d", len(reqs), tc.asks)
			}
			r := reqs[0]
			ids := []string{}
			for _, o := range r.Options {
				ids = append(ids, string(o.OptionId)+":"+string(o.Kind))
			}
			if want := []string{"allow_once:allow_once", "allow_always:allow_always", "reject_once:reject_once", "reject_always:reject_always"}; !slices.Equal(ids, want) {
				t.Errorf("options = %v", ids)
			}
			if r.ToolCall.ToolCallId != "call-1" || r.ToolCall.Kind == nil || *r.ToolCall.Kind != acpsdk.ToolKindEdit ||
				len(r.ToolCall.Content) != 1 || r.ToolCall.Content[0].Diff == nil || len(r.ToolCall.Locations) != 1 {
				t.Errorf("request tool call = %+v", r.ToolCall)
			}
			if _, err := os.Stat(filepath.Join(cwd, "f.txt")); (err == nil) != tc.written {
				t.Errorf("file written = %v, want %v", err == nil, tc.written)
			}
			last := toolResults(e.rec.snapshot(id))[fmt.Sprintf("call-%d", tc.calls)]
			raw, _ := json.Marshal(last.RawOutput)
			if tc.code == "" && *last.Status != acpsdk.ToolCallStatusCompleted || tc.code != "" && !strings.Contains(string(raw), tc.code) {
				t.Errorf("last result = %s %s", *last.Status, raw)
			}
			// The tool_call is on the wire before the request.
			lines := e.tap.lines()
			call := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"sessionUpdate":"tool_call"`) })
			ask := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"session/request_permission"`) })
			if call < 0 || ask < 0 || call > ask {
				t.Errorf("tool_call at line %d, request at %d", call, ask)
			}
		})
	}
}

func TestPermissionCancelledByPromptCancel(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(false, false, "hang")
	e := startWS(t, loadScript(t, writeScript(`{"path":"f.txt","content":"x"}`)), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	done := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, err := e.prompt(ctx, id, "go")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- r
	}()
	select {
	case <-c.askedCh:
	case <-ctx.Done():
		t.Fatal("no permission request")
	}
	if err := e.cs.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(id)}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason = %s", r.StopReason)
	}
	if _, err := os.Stat(filepath.Join(cwd, "f.txt")); err == nil {
		t.Errorf("file written after a cancelled permission request")
	}
	// The pending request was cancelled on the wire; the call failed as
	// aborted (the registry's code for a cancelled call supersedes the
	// gate's PERMISSION_CANCELLED).
	select {
	case <-c.hangEnded:
	case <-ctx.Done():
		t.Errorf("the pending permission request was not cancelled")
	}
	res := toolResults(e.rec.snapshot(id))["call-1"]
	raw, _ := json.Marshal(res.RawOutput)
	if *res.Status != acpsdk.ToolCallStatusFailed || !strings.Contains(string(raw), tool.CodeAborted) {
		t.Errorf("result = %s %s", *res.Status, raw)
	}
}

func TestOutsideCwdAlwaysAsks(t *testing.T) {
	ctx := ctxFor(t)
	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	args := fmt.Sprintf(`{"path":%q,"content":"x"}`, outside)
	c := newWSClient(false, false, "allow-always", "reject-once")
	e := startWS(t, loadScript(t, writeScript(args, args)), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "bypass"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	if n := len(c.requests()); n != 2 {
		t.Errorf("asked %d times, want 2 (outside the cwd asks even in bypass and after allow-always)", n)
	}
}

// modeScript: a write, then a command.
const modeScript = `
model:
  main:
    - tool_calls:
        - id: call-1
          name: ws_write
          arguments: '{"path":"m.txt","content":"m"}'
        - id: call-2
          name: ws_bash
          arguments: '{"command":"echo hi"}'
    - text: done
`

func TestModeMatrix(t *testing.T) {
	for _, tc := range []struct {
		mode              string
		asks              int
		writeCode, runCod string // "" = completed
	}{
		{"default", 2, "", ""},
		{"accept-edits", 1, "", ""},
		{"plan", 0, workspace.CodeModeForbids, workspace.CodeModeForbids},
		{"bypass", 0, "", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx := ctxFor(t)
			c := newWSClient(false, false, "allow-once", "allow-once")
			e := startWS(t, loadScript(t, modeScript), c)
			cwd := tempCwd(t)
			r, err := e.cs.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Modes == nil || r.Modes.CurrentModeId != "default" || len(r.Modes.AvailableModes) != 4 {
				t.Fatalf("modes = %+v", r.Modes)
			}
			id := string(r.SessionId)
			if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: r.SessionId, ModeId: acpsdk.SessionModeId(tc.mode)}); err != nil {
				t.Fatal(err)
			}
			if tc.mode != "default" {
				// Announced before the answer.
				var got []string
				for _, n := range e.rec.snapshot(id) {
					if u := n.Update.CurrentModeUpdate; u != nil {
						got = append(got, string(u.CurrentModeId))
					}
				}
				if !slices.Equal(got, []string{tc.mode}) {
					t.Errorf("current_mode_update = %v", got)
				}
			}
			if _, err := e.prompt(ctx, id, "go"); err != nil {
				t.Fatal(err)
			}
			if n := len(c.requests()); n != tc.asks {
				t.Errorf("asked %d times, want %d", n, tc.asks)
			}
			res := toolResults(e.rec.snapshot(id))
			for call, code := range map[string]string{"call-1": tc.writeCode, "call-2": tc.runCod} {
				raw, _ := json.Marshal(res[call].RawOutput)
				if code == "" && *res[call].Status != acpsdk.ToolCallStatusCompleted || code != "" && !strings.Contains(string(raw), code) {
					t.Errorf("%s = %s %s", call, *res[call].Status, raw)
				}
			}
			if tc.mode == "plan" {
				if raw, _ := json.Marshal(res["call-1"].RawOutput); !strings.Contains(string(raw), "plan mode") {
					t.Errorf("plan refusal not explained: %s", raw)
				}
			}
		})
	}
}

func TestModeSurvivesLoad(t *testing.T) {
	ctx := ctxFor(t)
	dir := t.TempDir()
	cwd := tempCwd(t)
	e := start(t, dir, loadScript(t, echoScript))
	e.initialize(ctx)
	id := e.newSession(ctx, cwd)
	for _, m := range []string{"plan", "accept-edits"} {
		if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: acpsdk.SessionModeId(m)}); err != nil {
			t.Fatal(err)
		}
	}
	e.stop()

	e2 := start(t, dir, loadScript(t, echoScript))
	e2.initialize(ctx)
	r, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Modes == nil || r.Modes.CurrentModeId != "accept-edits" {
		t.Fatalf("loaded modes = %+v", r.Modes)
	}
	var replayed []string
	for _, n := range e2.rec.snapshot(id) {
		if u := n.Update.CurrentModeUpdate; u != nil {
			replayed = append(replayed, string(u.CurrentModeId))
		}
	}
	if !slices.Equal(replayed, []string{"plan", "accept-edits"}) {
		t.Errorf("replayed modes = %v", replayed)
	}
}

func TestDisplayReplaysOnLoad(t *testing.T) {
	ctx := ctxFor(t)
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, writeScript(`{"path":"r.txt","content":"new"}`)), c)
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	live := toolResults(e.rec.snapshot(id))["call-1"]
	e.rec.reset()
	if _, err := e.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replayed := toolResults(e.rec.snapshot(id))["call-1"]
	a, _ := json.Marshal(live)
	b, _ := json.Marshal(replayed)
	if !bytes.Equal(a, b) || replayed.Content[0].Diff == nil {
		t.Errorf("replay differs:\nlive   %s\nreplay %s", a, b)
	}
}

// TestNoClientRejectsWhatNeedsAsking: a session no client is bound to (or
// whose client left) still works locally, but whatever needs a question
// is rejected, never allowed silently.
func TestNoClientRejectsWhatNeedsAsking(t *testing.T) {
	ctx := ctxFor(t)
	a, err := app.New(app.Config{DataDir: t.TempDir(), Version: "test", Logger: testLogger(t), Testing: &testhooks.Hooks{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cwd := tempCwd(t)
	s, err := a.Sessions.Create(session.Header{Cwd: cwd}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Sessions.Remove(s.ID())
	env, err := a.Workspace().Env(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if env.Cwd != cwd || env.Files == nil || env.Commands == nil {
		t.Fatalf("env = %+v", env)
	}
	if err := env.Permissions.Authorize(ctx, workspace.PermissionRequest{Tool: "read", Kind: workspace.KindRead}); err != nil {
		t.Errorf("a read in the cwd: %v", err)
	}
	err = env.Permissions.Authorize(ctx, workspace.PermissionRequest{Tool: "edit", Kind: workspace.KindEdit})
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != workspace.CodePermissionRejected {
		t.Errorf("an edit without a client = %v, want %s", err, workspace.CodePermissionRejected)
	}
}
