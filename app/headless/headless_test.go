package headless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/app/headless"
)

// peer is the agent's side of the connection, scripted per test: it
// records every request and notification, answers each method with
// onPrompt (session/prompt) or a fixed result, and can call back the
// client. It speaks the wire protocol (jsonrpc2 over pipes) as the real
// agent does; what Run does with the answers is what is tested.
type peer struct {
	t    *testing.T
	conn *jsonrpc2.Conn

	mu      sync.Mutex
	methods []string
	params  map[string]json.RawMessage
	// errs answers a method with an error.
	errs map[string]*jsonrpc2.Error
	// onPrompt runs session/prompt (on its own goroutine) and returns its
	// stop reason.
	onPrompt func(ctx context.Context, p *peer, sessionID string) string
	// cancelled is closed by session/cancel.
	cancelled chan struct{}
}

// pipes joins two one-way pipes into the ReadWriteCloser Run and the
// peer each use.
type pipes struct {
	io.Reader
	io.WriteCloser
}

// start connects Run's side to a new peer and returns what Run gets.
func start(t *testing.T, p *peer) io.ReadWriteCloser {
	t.Helper()
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	p.t = t
	p.params = map[string]json.RawMessage{}
	p.cancelled = make(chan struct{})
	p.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(pipes{toAgentR, toClientW}), jsonrpc2.AsyncHandler(p))
	go func() {
		// Run closes its side: the agent's input ends, and so does its output.
		<-p.conn.DisconnectNotify()
		toClientW.Close()
	}()
	t.Cleanup(func() { p.conn.Close() })
	return pipes{toClientR, toAgentW}
}

func (p *peer) Handle(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p.mu.Lock()
	p.methods = append(p.methods, req.Method)
	if req.Params != nil {
		p.params[req.Method] = *req.Params
	}
	rerr := p.errs[req.Method]
	p.mu.Unlock()
	if req.Notif {
		if req.Method == "session/cancel" {
			close(p.cancelled)
		}
		return
	}
	if rerr != nil {
		_ = c.ReplyWithError(ctx, req.ID, rerr)
		return
	}
	var result any = map[string]any{}
	switch req.Method {
	case "session/new":
		result = map[string]any{"sessionId": "sess-1"}
	case "session/prompt":
		var pr struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(*req.Params, &pr)
		stop := "end_turn"
		if p.onPrompt != nil {
			stop = p.onPrompt(ctx, p, pr.SessionID)
		}
		result = map[string]any{"stopReason": stop}
	}
	_ = c.Reply(ctx, req.ID, result)
}

// update sends a session/update of sessionID.
func (p *peer) update(ctx context.Context, sessionID string, u map[string]any) {
	if err := p.conn.Notify(ctx, "session/update", map[string]any{"sessionId": sessionID, "update": u}); err != nil {
		p.t.Errorf("notify: %v", err)
	}
}

// ask sends a permission question and returns the option id chosen.
func (p *peer) ask(ctx context.Context, sessionID, title string) string {
	var out struct {
		Outcome struct {
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := p.conn.Call(ctx, "session/request_permission", map[string]any{
		"sessionId": sessionID,
		"toolCall":  map[string]any{"toolCallId": "t1", "title": title, "kind": "edit"},
	}, &out); err != nil {
		p.t.Errorf("request_permission: %v", err)
	}
	return out.Outcome.OptionID
}

func text(s string) map[string]any {
	return map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": s}}
}

// A text run prints the text since the last tool call as the answer;
// earlier text, tool calls and failures are progress on stderr; updates
// of another session are not the run's.
func TestRunText(t *testing.T) {
	p := &peer{onPrompt: func(ctx context.Context, p *peer, id string) string {
		p.update(ctx, id, text("Let me look. "))
		p.update(ctx, id, map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.txt"})
		p.update(ctx, id, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})
		p.update(ctx, "someone-else", text("not mine"))
		p.update(ctx, id, text("It says "))
		p.update(ctx, id, text("hello."))
		return "end_turn"
	}}
	var stdout, stderr bytes.Buffer
	var before []string
	res, err := headless.Run(t.Context(), start(t, p), headless.Options{
		Prompt: "what does a.txt say", Cwd: "/work", Mode: "plan", Progress: true,
		Stdout: &stdout, Stderr: &stderr,
		BeforePrompt: func(id string) { before = append(before, id) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "sess-1" || res.StopReason != "end_turn" || res.Refused != 0 {
		t.Errorf("result = %+v", res)
	}
	if got := stdout.String(); got != "It says hello.\n" {
		t.Errorf("stdout = %q", got)
	}
	for _, s := range []string{"· session sess-1\n", "· Let me look.\n", "· tool: Read a.txt\n", "· failed: Read a.txt\n"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
		}
	}
	if strings.Contains(stdout.String()+stderr.String(), "not mine") {
		t.Error("another session's update reached the output")
	}
	if want := []string{"initialize", "session/new", "session/set_mode", "session/prompt"}; !slices.Equal(p.methods, want) {
		t.Errorf("methods = %v, want %v", p.methods, want)
	}
	if !slices.Equal(before, []string{"sess-1"}) {
		t.Errorf("BeforePrompt saw %v", before)
	}
	var newParams struct {
		Cwd        string          `json:"cwd"`
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	_ = json.Unmarshal(p.params["session/new"], &newParams)
	if newParams.Cwd != "/work" || string(newParams.MCPServers) != "[]" {
		t.Errorf("session/new params = %s", p.params["session/new"])
	}
}

// JSONL output writes each of the session's updates as one compact line,
// but not its slash commands; Answer replaces the streamed text.
func TestRunJSONLAndAnswer(t *testing.T) {
	prompt := func(ctx context.Context, p *peer, id string) string {
		p.update(ctx, id, map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{}})
		p.update(ctx, id, text("streamed"))
		return "end_turn"
	}
	t.Run("jsonl", func(t *testing.T) {
		var stdout bytes.Buffer
		if _, err := headless.Run(t.Context(), start(t, &peer{onPrompt: prompt}), headless.Options{
			Output: headless.OutputJSONL, Stdout: &stdout, Stderr: io.Discard,
		}); err != nil {
			t.Fatal(err)
		}
		want := `{"sessionId":"sess-1","update":{"content":{"text":"streamed","type":"text"},"sessionUpdate":"agent_message_chunk"}}` + "\n"
		if stdout.String() != want {
			t.Errorf("stdout = %q, want %q", stdout.String(), want)
		}
	})
	t.Run("answer from the session", func(t *testing.T) {
		var stdout bytes.Buffer
		if _, err := headless.Run(t.Context(), start(t, &peer{onPrompt: prompt}), headless.Options{
			Stdout: &stdout, Stderr: io.Discard,
			Answer: func(id string) (string, bool) { return "recorded answer for " + id, true },
		}); err != nil {
			t.Fatal(err)
		}
		if stdout.String() != "recorded answer for sess-1\n" {
			t.Errorf("stdout = %q", stdout.String())
		}
	})
}

// A permission question gets the --ask answer; refusals are counted and
// reported, and every answer is kept in order.
func TestRunPermissions(t *testing.T) {
	tests := []struct {
		ask     string
		option  string
		refused int
	}{
		{"", "reject_once", 2},
		{headless.AskDeny, "reject_once", 2},
		{headless.AskAllow, "allow_once", 0},
	}
	for _, tt := range tests {
		t.Run("ask="+tt.ask, func(t *testing.T) {
			var chosen []string
			p := &peer{onPrompt: func(ctx context.Context, p *peer, id string) string {
				chosen = append(chosen, p.ask(ctx, id, "Edit a.txt"), p.ask(ctx, id, "Edit b.txt"))
				return "end_turn"
			}}
			var stderr bytes.Buffer
			res, err := headless.Run(t.Context(), start(t, p), headless.Options{Ask: tt.ask, Stdout: io.Discard, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{tt.option, tt.option}; !slices.Equal(chosen, want) || !slices.Equal(res.Answers, want) {
				t.Errorf("chosen %v, answers %v, want %v", chosen, res.Answers, want)
			}
			if res.Refused != tt.refused {
				t.Errorf("refused = %d, want %d", res.Refused, tt.refused)
			}
			if got := strings.Count(stderr.String(), "acp-agent: refused: Edit"); got != tt.refused {
				t.Errorf("%d refusal lines, want %d:\n%s", got, tt.refused, stderr.String())
			}
		})
	}
}

// Resume reattaches the session instead of creating one, with the MCP
// servers given.
func TestRunResume(t *testing.T) {
	p := &peer{}
	res, err := headless.Run(t.Context(), start(t, p), headless.Options{
		Resume: "old-7", Cwd: "/w", MCPServers: json.RawMessage(`[{"name":"x"}]`), Stdout: io.Discard, Stderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "old-7" {
		t.Errorf("session = %q", res.SessionID)
	}
	if want := []string{"initialize", "session/resume", "session/prompt"}; !slices.Equal(p.methods, want) {
		t.Errorf("methods = %v, want %v", p.methods, want)
	}
	if got := string(p.params["session/resume"]); !strings.Contains(got, `"mcpServers":[{"name":"x"}]`) || !strings.Contains(got, `"sessionId":"old-7"`) {
		t.Errorf("session/resume params = %s", got)
	}
}

// A failed request returns an *RPCError with the agent's stable code.
func TestRunRPCError(t *testing.T) {
	data := json.RawMessage(`{"code":"UNKNOWN_SESSION","message":"no session old-9"}`)
	p := &peer{errs: map[string]*jsonrpc2.Error{"session/resume": {Code: -32602, Message: "invalid params", Data: &data}}}
	_, err := headless.Run(t.Context(), start(t, p), headless.Options{Resume: "old-9", Stdout: io.Discard, Stderr: io.Discard})
	var re *headless.RPCError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want an *RPCError", err)
	}
	if re.Method != "session/resume" || re.Code != -32602 || re.DataErr != "UNKNOWN_SESSION" || re.Message != "invalid params: no session old-9" {
		t.Errorf("RPCError = %+v", re)
	}
	if slices.Contains(p.methods, "session/prompt") {
		t.Error("prompted after the session failed")
	}
}

// Cancel during the turn sends session/cancel; the turn's own answer is
// the result, and AfterTurn does not run.
func TestRunCancel(t *testing.T) {
	cancel := make(chan struct{})
	p := &peer{onPrompt: func(ctx context.Context, p *peer, id string) string {
		close(cancel)
		<-p.cancelled
		return "cancelled"
	}}
	after := false
	res, err := headless.Run(t.Context(), start(t, p), headless.Options{
		Cancel: cancel, Stdout: io.Discard, Stderr: io.Discard,
		AfterTurn: func(context.Context, string) error { after = true; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "cancelled" || after {
		t.Errorf("result %+v, AfterTurn ran: %v", res, after)
	}
}

// AfterTurn runs after the answer; Cancel while it waits ends the wait
// and the run ends "cancelled"; its own failure is the run's.
func TestRunAfterTurn(t *testing.T) {
	t.Run("cancelled while waiting", func(t *testing.T) {
		cancel := make(chan struct{})
		res, err := headless.Run(t.Context(), start(t, &peer{}), headless.Options{
			Cancel: cancel, Stdout: io.Discard, Stderr: io.Discard,
			AfterTurn: func(ctx context.Context, id string) error {
				close(cancel)
				<-ctx.Done()
				return ctx.Err()
			},
		})
		if err != nil || res.StopReason != "cancelled" {
			t.Errorf("result %+v, %v; want cancelled, no error", res, err)
		}
	})
	t.Run("failed", func(t *testing.T) {
		boom := errors.New("boom")
		res, err := headless.Run(t.Context(), start(t, &peer{}), headless.Options{
			Stdout: io.Discard, Stderr: io.Discard,
			AfterTurn: func(context.Context, string) error { return boom },
		})
		if !errors.Is(err, boom) || res.StopReason != "end_turn" {
			t.Errorf("result %+v, %v; want end_turn and boom", res, err)
		}
	})
}
