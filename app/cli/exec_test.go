package cli_test

// Tests of "acp-agent exec" through cli.Main, over a fake OpenAI-compatible
// provider on 127.0.0.1 (httptest) that replays scripted streams: the real
// composition, its ACP server in process, the headless client.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/app/cli"
)

// reply is one scripted provider answer: text, a tool call, or an HTTP
// error status.
type reply struct {
	text     string
	toolName string
	toolArgs string
	status   int
}

// fakeProvider serves /chat/completions from a queue of replies and keeps
// every request body.
type fakeProvider struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []string
}

func newFakeProvider(t *testing.T, replies ...reply) *fakeProvider {
	t.Helper()
	p := &fakeProvider{t: t, replies: replies}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.requests = append(p.requests, string(body))
	if len(p.replies) == 0 {
		p.mu.Unlock()
		http.Error(w, `{"error":{"message":"no scripted reply left","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	rep := p.replies[0]
	p.replies = p.replies[1:]
	p.mu.Unlock()
	if r.URL.Path != "/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if rep.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		fmt.Fprint(w, `{"error":{"message":"the fake provider refuses this request","type":"invalid_request_error","code":"bad_request"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	finish := "stop"
	if rep.text != "" {
		// Two chunks, so the answer is assembled from a stream.
		half := len(rep.text) / 2
		for _, part := range []string{rep.text[:half], rep.text[half:]} {
			b, _ := json.Marshal(map[string]string{"content": part})
			chunk(string(b), "")
		}
	}
	if rep.toolName != "" {
		b, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": "call_1", "type": "function",
			"function": map[string]string{"name": rep.toolName, "arguments": rep.toolArgs},
		}}})
		chunk(string(b), "")
		finish = "tool_calls"
	}
	chunk(`{}`, finish)
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"fake\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\ndata: [DONE]\n\n")
}

func (p *fakeProvider) bodies() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// execEnv is a data directory, a home and a cwd for exec runs.
type execEnv struct {
	t    *testing.T
	vars map[string]string
	cwd  string
	// process is the signals, exit and terminal check the run gets.
	process cli.Process
}

func newExecEnv(t *testing.T) *execEnv {
	t.Helper()
	root := t.TempDir()
	e := &execEnv{t: t, cwd: filepath.Join(root, "work"), vars: map[string]string{
		cli.EnvDataDir:    filepath.Join(root, "data"),
		"HOME":            root,
		"XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"FAKE_KEY":        "sk-fake-exec",
	}}
	if err := os.MkdirAll(e.cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	return e
}

// userSettings writes the user-level settings file.
func (e *execEnv) userSettings(json string) {
	e.t.Helper()
	dir := filepath.Join(e.vars["XDG_CONFIG_HOME"], "acp-agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(json), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// run runs "acp-agent exec" against p with args after the model flags.
func (e *execEnv) run(p *fakeProvider, stdin string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	full := []string{"exec", "--cwd", e.cwd}
	if p != nil {
		full = append(full, "--model", "openai-compatible/fake", "--base-url", p.srv.URL, "--api-key-env", "FAKE_KEY")
	}
	full = append(full, args...)
	var out, errOut bytes.Buffer
	code = cli.Run(context.Background(), e.process, full, strings.NewReader(stdin), &out, &errOut, func(k string) string { return e.vars[k] })
	return code, out.String(), errOut.String()
}

// updates parses jsonl output: one session/update params object a line,
// and the result line, which must be the last one, once.
func updates(t *testing.T, out string) []map[string]any {
	t.Helper()
	var us []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	results := 0
	for sc.Scan() {
		var u map[string]any
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatalf("jsonl line is not JSON: %q: %v", sc.Text(), err)
		}
		if results > 0 {
			t.Fatalf("a line after the result line: %s", sc.Text())
		}
		if u["type"] == "result" {
			results++
			continue
		}
		if _, ok := u["sessionId"].(string); !ok {
			t.Fatalf("jsonl line without sessionId: %s", sc.Text())
		}
		if _, ok := u["update"].(map[string]any)["sessionUpdate"].(string); !ok {
			t.Fatalf("jsonl line without update.sessionUpdate: %s", sc.Text())
		}
		us = append(us, u)
	}
	return us
}

// resultOf is the result line of jsonl output (the last line).
func resultOf(t *testing.T, out string) map[string]any {
	t.Helper()
	updates(t, out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var r map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r["type"] != "result" {
		t.Fatalf("the last jsonl line is not the result line: %q", lines[len(lines)-1])
	}
	return r
}

func kindOf(u map[string]any) string { return u["update"].(map[string]any)["sessionUpdate"].(string) }

func TestExecPrintsTheAnswer(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{text: "Hello, world!"})
	code, out, errOut := e.run(p, "", "Say hello")
	if code != cli.ExitOK || out != "Hello, world!\n" {
		t.Fatalf("exit %d, stdout %q, want 0 and the answer alone\nstderr: %s", code, out, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr not empty without a terminal: %q", errOut)
	}
	if bs := p.bodies(); len(bs) != 1 || !strings.Contains(bs[0], "Say hello") {
		t.Fatalf("provider requests %q, want one carrying the prompt", bs)
	}
}

func TestExecReadsThePromptFromStdin(t *testing.T) {
	for _, args := range [][]string{{"-"}, {}} {
		e := newExecEnv(t)
		p := newFakeProvider(t, reply{text: "ok"})
		code, out, errOut := e.run(p, "prompt from a pipe\n", args...)
		if code != cli.ExitOK || out != "ok\n" {
			t.Fatalf("args %q: exit %d, stdout %q\nstderr: %s", args, code, out, errOut)
		}
		if bs := p.bodies(); len(bs) != 1 || !strings.Contains(bs[0], "prompt from a pipe") {
			t.Fatalf("args %q: provider got %q, want the stdin prompt", args, bs)
		}
	}
}

func TestExecAnswerIsTheLastMessage(t *testing.T) {
	e := newExecEnv(t)
	e.userSettings(`{"permissions": {"allow": ["read"]}}`)
	if err := os.WriteFile(filepath.Join(e.cwd, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newFakeProvider(t,
		reply{text: "Let me look.", toolName: "read", toolArgs: `{"path":"a.txt"}`},
		reply{text: "It says alpha."})
	code, out, errOut := e.run(p, "", "What is in a.txt?")
	if code != cli.ExitOK || out != "It says alpha.\n" {
		t.Fatalf("exit %d, stdout %q, want only the final message\nstderr: %s", code, out, errOut)
	}
	if bs := p.bodies(); len(bs) != 2 || !strings.Contains(bs[1], "alpha") {
		t.Fatalf("second request %q, want the read result in it", bs)
	}
}

func TestExecJSONLPrintsEveryUpdate(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{text: "Hello, world!"})
	code, out, errOut := e.run(p, "", "--output", "jsonl", "Say hello")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	us := updates(t, out)
	var text strings.Builder
	ids := map[string]bool{}
	for _, u := range us {
		ids[u["sessionId"].(string)] = true
		if kindOf(u) == "agent_message_chunk" {
			text.WriteString(u["update"].(map[string]any)["content"].(map[string]any)["text"].(string))
		}
	}
	if text.String() != "Hello, world!" || len(ids) != 1 {
		t.Fatalf("chunks %q over sessions %v, want the answer on one session\n%s", text.String(), ids, out)
	}
}

func TestExecProviderFailureExitsOne(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{status: http.StatusBadRequest})
	code, out, errOut := e.run(p, "", "Say hello")
	if code != cli.ExitError {
		t.Fatalf("exit %d, want %d\nstdout: %q\nstderr: %s", code, cli.ExitError, out, errOut)
	}
	if !strings.Contains(errOut, "turn failed") || out != "" {
		t.Fatalf("stdout %q, stderr %q: want nothing on stdout and the failure on stderr", out, errOut)
	}
}

func TestExecUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		noLLM bool
		want  string
	}{
		{name: "empty prompt", args: []string{"-"}, want: "prompt is empty"},
		{name: "two prompts", args: []string{"a", "b"}, want: "want one PROMPT"},
		{name: "bad output", args: []string{"--output", "yaml", "hi"}, want: "--output"},
		{name: "bad ask", args: []string{"--ask", "maybe", "hi"}, want: "--ask"},
		{name: "bad mode", args: []string{"--mode", "yolo", "hi"}, want: "--mode"},
		{name: "bad mcp json", args: []string{"--mcp-config", "[{", "hi"}, want: "--mcp-config"},
		{name: "mcp file missing", args: []string{"--mcp-config", "/nonexistent/mcp.json", "hi"}, want: "--mcp-config"},
		{name: "unknown session", args: []string{"--resume", "0c6a3f4e-8d6e-4a43-9a57-1c1f1f3b2f00", "hi"}, want: "0c6a3f4e"},
		{name: "no model", args: []string{"hi"}, noLLM: true, want: "model"},
		{name: "unknown flag", args: []string{"--frobnicate", "hi"}, want: "--frobnicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			p := newFakeProvider(t, reply{text: "never"})
			if tt.noLLM {
				p = nil
			}
			code, out, errOut := e.run(p, tt.stdin, tt.args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tt.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2, nothing on stdout, and %q", code, out, errOut, tt.want)
			}
			if p != nil && len(p.bodies()) != 0 {
				t.Fatalf("a usage error reached the provider: %q", p.bodies())
			}
		})
	}
}

// A write without an allow rule asks; nobody is there, so --ask deny
// (the default) refuses it: exit 3, the file untouched, the refusal
// shown. --ask allow, or an allow rule in the settings, runs it.
func TestExecRefusesUnansweredQuestions(t *testing.T) {
	write := reply{toolName: "write", toolArgs: `{"path":"notes.txt","content":"written\n"}`}
	tests := []struct {
		name     string
		args     []string
		settings string
		wantCode int
		written  bool
	}{
		{name: "deny by default", args: []string{"Write notes"}, wantCode: cli.ExitRefused},
		{name: "deny jsonl", args: []string{"--output", "jsonl", "Write notes"}, wantCode: cli.ExitRefused},
		{name: "ask allow", args: []string{"--ask", "allow", "Write notes"}, wantCode: cli.ExitOK, written: true},
		{name: "allow rule", args: []string{"Write notes"}, settings: `{"permissions": {"allow": ["write"]}}`, wantCode: cli.ExitOK, written: true},
		{name: "mode accept-edits", args: []string{"--mode", "accept-edits", "Write notes"}, wantCode: cli.ExitOK, written: true},
		{name: "plan mode forbids", args: []string{"--mode", "plan", "Write notes"}, wantCode: cli.ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			if tt.settings != "" {
				e.userSettings(tt.settings)
			}
			p := newFakeProvider(t, write, reply{text: "Done."})
			code, out, errOut := e.run(p, "", tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			_, err := os.Stat(filepath.Join(e.cwd, "notes.txt"))
			if written := err == nil; written != tt.written {
				t.Fatalf("notes.txt written = %v, want %v", written, tt.written)
			}
			jsonl := slicesContains(tt.args, "jsonl")
			switch {
			case tt.wantCode == cli.ExitRefused && jsonl:
				if !failedWith(updates(t, out), "PERMISSION_REJECTED") {
					t.Fatalf("no failed tool_call_update with PERMISSION_REJECTED in the jsonl:\n%s", out)
				}
			case tt.wantCode == cli.ExitRefused:
				if !strings.Contains(errOut, "refused: ") || !strings.Contains(errOut, "notes.txt") || out != "Done.\n" {
					t.Fatalf("stdout %q, stderr %q: want the answer and a refusal line naming the call", out, errOut)
				}
			default:
				if strings.Contains(errOut, "refused: ") {
					t.Fatalf("stderr %q reports a refusal where none was asked", errOut)
				}
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func failedWith(us []map[string]any, code string) bool {
	for _, u := range us {
		up := u["update"].(map[string]any)
		if kindOf(u) != "tool_call_update" || up["status"] != "failed" {
			continue
		}
		if raw, ok := up["rawOutput"].(map[string]any); ok {
			if e, ok := raw["error"].(map[string]any); ok && e["code"] == code {
				return true
			}
		}
	}
	return false
}

func TestExecResumeContinuesTheSession(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{text: "The word is kumquat."}, reply{text: "You asked about a word."})
	code, out, errOut := e.run(p, "", "--output", "jsonl", "Remember the word kumquat")
	if code != cli.ExitOK {
		t.Fatalf("first run: exit %d\nstderr: %s", code, errOut)
	}
	id := updates(t, out)[0]["sessionId"].(string)
	code, out, errOut = e.run(p, "", "--resume", id, "What did I ask?")
	if code != cli.ExitOK || out != "You asked about a word.\n" {
		t.Fatalf("resume: exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
	bs := p.bodies()
	if len(bs) != 2 || !strings.Contains(bs[1], "Remember the word kumquat") || !strings.Contains(bs[1], "The word is kumquat.") {
		t.Fatalf("the resumed turn's request lacks the first turn: %q", bs)
	}
	// A second session/new would not carry the history.
	if strings.Contains(bs[0], "What did I ask?") {
		t.Fatalf("first request carries the second prompt: %q", bs[0])
	}
}

func TestExecScriptedModelNeedsNoKey(t *testing.T) {
	e := newExecEnv(t)
	script := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(script, []byte("model:\n  main:\n    - text: Scripted answer.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := e.run(nil, "", "--model", "script:"+script, "Anything")
	if code != cli.ExitOK || out != "Scripted answer.\n" {
		t.Fatalf("exit %d, stdout %q\nstderr: %s", code, out, errOut)
	}
}

func TestExecFlagsHaveEnvironmentVariables(t *testing.T) {
	e := newExecEnv(t)
	e.vars[cli.EnvExecOutput] = "jsonl"
	e.vars[cli.EnvExecAsk] = "allow"
	p := newFakeProvider(t, reply{toolName: "write", toolArgs: `{"path":"n.txt","content":"x"}`}, reply{text: "Done."})
	code, out, errOut := e.run(p, "", "Write")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	updates(t, out) // jsonl, from the variable
	if _, err := os.Stat(filepath.Join(e.cwd, "n.txt")); err != nil {
		t.Fatalf("--ask allow from %s did not apply: %v", cli.EnvExecAsk, err)
	}
	e.vars[cli.EnvExecOutput] = "yaml"
	if code, _, errOut := e.run(p, "", "Write"); code != cli.ExitUsage {
		t.Fatalf("bad %s: exit %d, want 2\n%s", cli.EnvExecOutput, code, errOut)
	}
	// The flag wins over the variable.
	p = newFakeProvider(t, reply{text: "Plain."})
	if code, out, errOut := e.run(p, "", "--output", "text", "Hi"); code != cli.ExitOK || out != "Plain.\n" {
		t.Fatalf("flag over variable: exit %d, stdout %q\n%s", code, out, errOut)
	}
}

// --wait-children waits for a background subagent to settle and for the
// turn its notice starts; without it, exec ends with the turn.
func TestExecWaitChildren(t *testing.T) {
	script := `model:
  main:
    - tool_calls:
        - id: call_bg
          name: subagent
          arguments: '{"description": "Slow helper", "prompt": "Take a moment, then reply."}'
    - text: STARTED
    - text: NOTED
  Slow helper:
    - tool_calls:
        - id: call_sleep
          name: bash
          arguments: '{"command": "sleep 1", "description": "wait a moment"}'
    - text: HELPER_DONE
`
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "without", args: []string{"--mode", "bypass"}, want: "STARTED\n"},
		{name: "with", args: []string{"--mode", "bypass", "--wait-children"}, want: "NOTED\n"},
		// The child's question may come after the turn: exec answers it
		// then (it says it answers between prompts), not at a next prompt
		// that never comes.
		{name: "child asks after the turn", args: []string{"--ask", "allow", "--wait-children"}, want: "NOTED\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			path := filepath.Join(t.TempDir(), "children.yaml")
			if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--model", "script:" + path}, tt.args...)
			code, out, errOut := e.run(nil, "", append(args, "Delegate it")...)
			if code != cli.ExitOK || out != tt.want {
				t.Fatalf("exit %d, stdout %q, want 0 and %q\nstderr: %s", code, out, tt.want, errOut)
			}
		})
	}
}

// A slash command's output is the answer, not the resumed session's
// previous one.
func TestExecSlashCommandAfterResume(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{text: "First answer."})
	code, out, errOut := e.run(p, "", "--output", "jsonl", "Hello")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	id := updates(t, out)[0]["sessionId"].(string)
	code, out, errOut = e.run(p, "", "--resume", id, "/agents")
	if code != cli.ExitOK || !strings.Contains(out, "Subagents of this session") || strings.Contains(out, "First answer.") {
		t.Fatalf("exit %d, stdout %q, want the /agents listing only\n%s", code, out, errOut)
	}
}

// --mcp-config takes what an editor sends as mcpServers: the session gets
// the server's tools (mcp__demo__echo, read-only, runs without asking).
func TestExecMCPConfig(t *testing.T) {
	srv, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	servers := fmt.Sprintf(`[{"type":"http","name":"demo","url":"%s/demo","headers":[]}]`, srv.URL)
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": `+servers+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{servers, file} {
		e := newExecEnv(t)
		p := newFakeProvider(t, reply{toolName: "mcp__demo__echo", toolArgs: `{"text":"hello from mcp"}`}, reply{text: "Echoed."})
		code, out, errOut := e.run(p, "", "--mcp-config", cfg, "Echo it")
		if code != cli.ExitOK || out != "Echoed.\n" {
			t.Fatalf("--mcp-config %s: exit %d, stdout %q\n%s", cfg, code, out, errOut)
		}
		bs := p.bodies()
		if len(bs) != 2 || !strings.Contains(bs[0], "mcp__demo__echo") || strings.Count(bs[1], "hello from mcp") < 2 {
			t.Fatalf("--mcp-config %s: the MCP tool was not offered or its result (the echo, besides the call) not returned: %q", cfg, bs)
		}
	}
}

// A call a settings rule denies is reported on stderr by its title; it
// is the configuration working, so the run still exits 0.
func TestExecReportsRuleDenials(t *testing.T) {
	e := newExecEnv(t)
	e.userSettings(`{"permissions": {"deny": ["write(secret.txt)"]}}`)
	p := newFakeProvider(t, reply{toolName: "write", toolArgs: `{"path":"secret.txt","content":"x"}`}, reply{text: "Could not."})
	code, out, errOut := e.run(p, "", "--ask", "allow", "Write the secret")
	if code != cli.ExitOK || out != "Could not.\n" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "refused (RULE_DENIES): ") || !strings.Contains(errOut, "secret.txt") {
		t.Fatalf("stderr %q: want the rule's refusal naming the call", errOut)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "secret.txt")); err == nil {
		t.Fatal("a denied write was written")
	}
}

// --record writes the scenario: the mode and the permission answers the
// run gave become its steps; it cannot record a resumed session.
func TestExecRecord(t *testing.T) {
	e := newExecEnv(t)
	dir := filepath.Join(t.TempDir(), "rec")
	p := newFakeProvider(t, reply{toolName: "write", toolArgs: `{"path":"n.txt","content":"x"}`}, reply{text: "Written."})
	code, out, errOut := e.run(p, "", "--ask", "allow", "--mode", "default", "--record", dir, "Write n.txt")
	if code != cli.ExitOK || out != "Written.\n" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"set_mode: default", "permissions:\n        - allow_once", "text: Write n.txt", "name: write", "text: Written."} {
		if !strings.Contains(string(data), want) {
			t.Errorf("scenario lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), e.vars["FAKE_KEY"]) {
		t.Errorf("the key reached the scenario:\n%s", data)
	}
	if code, _, errOut := e.run(p, "", "--resume", "some-id", "--record", dir, "Again"); code != cli.ExitUsage || !strings.Contains(errOut, "--resume") {
		t.Fatalf("--record with --resume: exit %d, want 2\n%s", code, errOut)
	}
}

// TestExecProgressOnATerminal: with stderr a terminal, exec narrates on
// it (the session, each tool call, the text before it) while stdout
// carries the answer alone; without one, stderr stays empty.
func TestExecProgressOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		want     []string
	}{
		{name: "terminal", terminal: true, want: []string{"· session ", "· Looking at the file.", "· tool: read notes.txt"}},
		{name: "no terminal", terminal: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExecEnv(t)
			e.process.StderrTerminal = func(io.Writer) bool { return tc.terminal }
			if err := os.WriteFile(filepath.Join(e.cwd, "notes.txt"), []byte("one note\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := newFakeProvider(t,
				reply{text: "Looking at the file.", toolName: "read", toolArgs: `{"path": "notes.txt"}`},
				reply{text: "One note."})
			code, out, errOut := e.run(p, "", "Read notes.txt")
			if code != cli.ExitOK || out != "One note.\n" {
				t.Fatalf("exit %d, stdout %q, want 0 and the answer alone\nstderr: %s", code, out, errOut)
			}
			if len(tc.want) == 0 && errOut != "" {
				t.Errorf("stderr without a terminal: %q", errOut)
			}
			last := -1
			for _, w := range tc.want {
				i := strings.Index(errOut, w)
				if i <= last {
					t.Errorf("stderr lacks %q after the earlier progress lines:\n%s", w, errOut)
				}
				last = i
			}
			if strings.Contains(errOut, "One note.") {
				t.Errorf("the answer went to stderr too:\n%s", errOut)
			}
		})
	}
}

// --ask allow answers only what a person could answer "allow once" to in
// the default mode: a protected path (.git/hooks, .vscode/tasks.json, an
// agent's config) and a write outside the working directory stay refused
// (exit 3, nothing written), unless the run is in bypass mode. Through
// the real ACP connection of exec.
func TestExecAskAllowKeepsProtectedAndOutside(t *testing.T) {
	tests := []struct {
		name, path string
		mode       string
		wantCode   int
		written    bool
	}{
		{name: "hook", path: ".git/hooks/pre-commit", wantCode: cli.ExitRefused},
		{name: "editor task", path: ".vscode/tasks.json", wantCode: cli.ExitRefused},
		{name: "claude settings", path: ".claude/settings.json", wantCode: cli.ExitRefused},
		{name: "outside", path: "../outside.txt", wantCode: cli.ExitRefused},
		{name: "inside", path: "notes.txt", wantCode: cli.ExitOK, written: true},
		{name: "hook in bypass", path: ".git/hooks/pre-commit", mode: "bypass", wantCode: cli.ExitOK, written: true},
		{name: "outside in bypass", path: "../outside.txt", mode: "bypass", wantCode: cli.ExitOK, written: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			if err := os.MkdirAll(filepath.Join(e.cwd, ".git", "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(map[string]string{"path": tt.path, "content": "x\n"})
			p := newFakeProvider(t, reply{toolName: "write", toolArgs: string(args)}, reply{text: "Done."})
			run := []string{"--ask", "allow"}
			if tt.mode != "" {
				run = append(run, "--mode", tt.mode)
			}
			code, out, errOut := e.run(p, "", append(run, "Write it")...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			_, err := os.Stat(filepath.Join(e.cwd, tt.path))
			if written := err == nil; written != tt.written {
				t.Fatalf("%s written = %v, want %v\nstderr: %s", tt.path, written, tt.written, errOut)
			}
			if !tt.written && !strings.Contains(errOut, "--ask allow answers only what a person could allow once") {
				t.Fatalf("stderr %q: want the reason of the refusal", errOut)
			}
		})
	}
}

// The headless client names the agent's _meta key itself (it speaks to
// the agent over the wire only): the two must agree.
func TestExecKnowsThePathClassKey(t *testing.T) {
	if acp.MetaPathClass != "acp-agent/pathClass" || acp.PathProtected != "protected" || acp.PathOutside != "outside" {
		t.Fatal("acp's path class _meta changed: update app/headless to match")
	}
}
