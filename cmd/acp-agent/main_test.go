package main

// End-to-end tests: the real process (this test binary re-executed as
// acp-agent through a TestMain switch) driven over real stdio by a client
// written on sourcegraph/jsonrpc2, independent of the ACP SDK.

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/persistence"
)

// beMain makes the test binary act as acp-agent.
const beMain = "ACP_AGENT_TEST_BE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(beMain) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, persistence.WithHome(os.Getenv), crashServeCommand(), diskFullServeCommand(), benchDelegateCommand()))
	}
	goleak.VerifyTestMain(m)
}

// proc is one acp-agent process and a jsonrpc2 client on its stdio.
type proc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  io.ReadCloser // the client's read end of the agent's stdout
	stderr  *bytes.Buffer
	conn    *jsonrpc2.Conn
	lines   chan error // the stdout checker's verdict
	mu      sync.Mutex
	updates []json.RawMessage
	// asked holds the params of each session/request_permission received;
	// permissionAnswer is the option id the client selects, "" to never
	// answer (the request stays pending).
	asked            []json.RawMessage
	permissionAnswer string
	cwd              string // the cwd of the last session/new
}

// stdio joins the checked stdout and the process's stdin for jsonrpc2.
type stdio struct {
	io.Reader
	io.WriteCloser
}

func startProc(t testing.TB, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, nil, args...)
}

// startProcEnv is startProc with extra environment variables.
func startProcEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), beMain+"=1"), env...)
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, lines: make(chan error, 1)}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Check every stdout line is one complete JSON-RPC 2.0 object before
	// the client sees it (jsonrpc2's decoder would accept multi-line JSON).
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		var verdict error
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
				verdict = errors.Join(verdict, fmt.Errorf("stdout line is not a JSON-RPC object: %q", sc.Text()))
				continue
			}
			pw.Write(append(sc.Bytes(), '\n'))
		}
		pw.Close()
		p.lines <- verdict
	}()
	handler := jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		// Runs synchronously on the read loop: record and answer at once,
		// never call back into the agent from here.
		if req.Method == "session/update" && req.Params != nil {
			p.mu.Lock()
			p.updates = append(p.updates, *req.Params)
			p.mu.Unlock()
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "test client supports no requests"}
	})
	p.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(stdio{pr, p.stdin}), clientHandler{p, handler})
	t.Cleanup(func() {
		p.conn.Close()
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// clientHandler answers session/request_permission as p.permissionAnswer
// says (or never) and passes every other request to next.
type clientHandler struct {
	p    *proc
	next jsonrpc2.Handler
}

func (h clientHandler) Handle(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Method != "session/request_permission" || req.Notif || req.Params == nil {
		h.next.Handle(ctx, c, req)
		return
	}
	h.p.mu.Lock()
	h.p.asked = append(h.p.asked, *req.Params)
	answer := h.p.permissionAnswer
	h.p.mu.Unlock()
	if answer == "" {
		return // left pending
	}
	_ = c.Reply(ctx, req.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer}})
}

// answerPermissions makes the client select optionID in every later
// session/request_permission.
func (p *proc) answerPermissions(optionID string) {
	p.mu.Lock()
	p.permissionAnswer = optionID
	p.mu.Unlock()
}

func (p *proc) call(t testing.TB, method string, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.conn.Call(ctx, method, params, result); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", method, err, p.stderr)
	}
}

// finish closes stdin and returns the exit code and the stdout verdict.
func (p *proc) finish(t *testing.T) (int, error) {
	t.Helper()
	p.stdin.Close()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode(), <-p.lines
}

func TestBinaryServesACPOverStdio(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte("model:\n  main:\n    - reasoning: \"hmm\"\n      text: \"Hello from the script.\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "--data-dir", filepath.Join(dir, "data"), "--model", "script:"+script, "--log-level", "debug")

	var init struct {
		ProtocolVersion int                   `json:"protocolVersion"`
		AgentInfo       struct{ Name string } `json:"agentInfo"`
	}
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	if init.ProtocolVersion != 1 || init.AgentInfo.Name != "acp-agent" {
		t.Errorf("initialize = %+v", init)
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, &created)
	var res struct {
		StopReason string `json:"stopReason"`
	}
	p.call(t, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "say hello"}}}, &res)
	if res.StopReason != "end_turn" {
		t.Errorf("stopReason = %q", res.StopReason)
	}
	// jsonrpc2 handles notifications in order before the response, so
	// the turn's updates are all here.
	p.mu.Lock()
	var text strings.Builder
	for _, u := range p.updates {
		var n struct {
			Update struct {
				Kind    string                `json:"sessionUpdate"`
				Content struct{ Text string } `json:"content"`
			} `json:"update"`
		}
		json.Unmarshal(u, &n)
		if n.Update.Kind == "agent_message_chunk" {
			text.WriteString(n.Update.Content.Text)
		}
	}
	p.mu.Unlock()
	if text.String() != "Hello from the script." {
		t.Errorf("streamed text = %q", text.String())
	}
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		}
	}
	p.call(t, "session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != created.SessionID {
		t.Errorf("session/list = %+v", list)
	}

	code, verdict := p.finish(t)
	if code != 0 {
		t.Errorf("exit code after stdin EOF = %d, want 0\nstderr:\n%s", code, p.stderr)
	}
	if verdict != nil {
		t.Error(verdict)
	}
	if !strings.Contains(p.stderr.String(), "serving acp on stdio") {
		t.Errorf("logs did not go to stderr:\n%s", p.stderr)
	}
}

func TestBinaryExitsZeroOnSIGTERM(t *testing.T) {
	p := startProc(t, "--data-dir", t.TempDir())
	var init map[string]any
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	if err != nil {
		t.Errorf("exit after SIGTERM: %v\nstderr:\n%s", err, p.stderr)
	}
	p.stdin.Close()
	if v := <-p.lines; v != nil {
		t.Error(v)
	}
}

func TestBinaryExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, 0},
		{"version", []string{"--version"}, 0},
		{"unknown flag", []string{"--no-such-flag"}, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"bad log level", []string{"--log-level", "loud"}, 2},
		{"missing script", []string{"--data-dir", "DATA", "--model", "script:/no/such/script.yaml"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := slicesReplace(tt.args, "DATA", t.TempDir())
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), beMain+"=1")
			cmd.Stdin = strings.NewReader("")
			out, _ := cmd.CombinedOutput()
			if got := cmd.ProcessState.ExitCode(); got != tt.want {
				t.Errorf("exit code = %d, want %d\n%s", got, tt.want, out)
			}
		})
	}
}

func slicesReplace(in []string, old, new string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ReplaceAll(s, old, new)
	}
	return out
}

// TestExitPersistsEveryEvent: a prompt hangs in the model when the client
// closes stdin (or SIGTERM arrives); after the process exited, the session
// file on disk holds the whole turn, closed by the shutdown's turn/end.
func TestExitPersistsEveryEvent(t *testing.T) {
	for _, how := range []string{"eof", "sigterm"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "script.yaml")
			if err := os.WriteFile(script, []byte("model:\n  main:\n    - text: \"first\"\n    - text: \"working\"\n      hang: true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(dir, "data")
			p := startProc(t, "--data-dir", data, "--model", "script:"+script)
			var init map[string]any
			p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
			var created struct {
				SessionID string `json:"sessionId"`
			}
			p.call(t, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, &created)
			prompt := map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}
			var res struct{ StopReason string }
			p.call(t, "session/prompt", prompt, &res)
			// The second prompt hangs in the model; wait for its text.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			answered := make(chan error, 1)
			go func() { answered <- p.conn.Call(ctx, "session/prompt", prompt, &res) }()
			for {
				p.mu.Lock()
				seen := len(p.updates) > 0 && strings.Contains(string(p.updates[len(p.updates)-1]), "working")
				p.mu.Unlock()
				if seen {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("no streamed text\nstderr:\n%s", p.stderr)
				case <-time.After(10 * time.Millisecond):
				}
			}
			switch how {
			case "eof":
				p.stdin.Close()
			case "sigterm":
				p.cmd.Process.Signal(syscall.SIGTERM)
			}
			if err := <-answered; err != nil {
				t.Errorf("hanging prompt: %v", err)
			}
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("exit: %v\nstderr:\n%s", err, p.stderr)
			}
			raw, err := os.ReadFile(filepath.Join(data, "sessions", created.SessionID+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
			var types []string
			for _, l := range lines[1:] {
				var ev struct {
					Type string          `json:"type"`
					Data json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal([]byte(l), &ev); err != nil {
					t.Fatalf("bad line %q: %v", l, err)
				}
				types = append(types, ev.Type)
			}
			ends := 0
			for _, ty := range types {
				if ty == "turn/end" {
					ends++
				}
			}
			if ends != 2 || types[len(types)-1] != "turn/end" || !strings.Contains(lines[len(lines)-1], "aborted") {
				t.Errorf("stored log does not end with the aborted second turn:\n%s\nstderr:\n%s", raw, p.stderr)
			}
		})
	}
}

// TestSIGTERMRightAfterStartIsGraceful: a SIGTERM sent as soon as the
// process announced it is serving ends it through the graceful shutdown
// (exit 0), never through the default action of the signal.
func TestSIGTERMRightAfterStartIsGraceful(t *testing.T) {
	for i := range 10 {
		cmd := exec.Command(os.Args[0], "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), beMain+"=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		var logs strings.Builder
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "serving acp on stdio") {
				cmd.Process.Signal(syscall.SIGTERM)
				break
			}
		}
		rest, _ := io.ReadAll(stderr)
		logs.Write(rest)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("attempt %d: exit after SIGTERM: %v\nstderr:\n%s", i, err, logs.String())
		}
	}
}
