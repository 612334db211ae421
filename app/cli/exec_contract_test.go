package cli_test

// Tests of exec's contract for CI: the result line ending --output
// jsonl, each exit status with its cause on stderr, a broken stdout and
// a signal before the session exists, piped stdin with a prompt, --bare
// and --log-level after the command's name.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/tool/mcp/mcptest"
	"github.com/acp-agent/acp-agent/app/cli"
)

// runScript runs exec over a scripted model (no key) in bypass mode.
func (e *execEnv) runScript(script, stdin string, args ...string) (int, string, string) {
	e.t.Helper()
	full := append([]string{"--model", "script:" + writeScript(e.t, script), "--mode", "bypass"}, args...)
	return e.run(nil, stdin, full...)
}

func sessionFiles(t *testing.T, e *execEnv) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(e.vars[cli.EnvDataDir], "sessions", "*.jsonl"))
	return names
}

// The result line: session id, outcome, exit status, stop reason, turns,
// duration, usage per model and per child, the children's outcomes.
func TestExecResultLine(t *testing.T) {
	script := `model:
  main:
    - tool_calls:
        - {id: call_1, name: subagent, arguments: '{"description": "Helper", "prompt": "Help.", "run_in_background": false}'}
      usage: {input: 100, output: 10}
    - text: ALL DONE
      usage: {input: 200, output: 20}
  Helper:
    - text: HELPED
      usage: {input: 30, output: 3}
`
	e := newExecEnv(t)
	code, out, errOut := e.runScript(script, "", "--output", "jsonl", "Go")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	r := resultOf(t, out)
	us := updates(t, out)
	if r["sessionId"] != us[0]["sessionId"] || r["outcome"] != "done" || r["exitStatus"] != float64(0) || r["stopReason"] != "end_turn" {
		t.Fatalf("result line %v", r)
	}
	if r["turns"] != float64(1) {
		t.Errorf("turns = %v, want 1", r["turns"])
	}
	if _, ok := r["durationMs"].(float64); !ok {
		t.Errorf("no durationMs: %v", r)
	}
	usage := r["usage"].(map[string]any)
	if usage["inputTokens"] != float64(330) || usage["outputTokens"] != float64(33) {
		t.Errorf("tree usage %v, want 330 in / 33 out", usage)
	}
	if own := r["sessionUsage"].(map[string]any); own["inputTokens"] != float64(300) {
		t.Errorf("session usage %v, want 300 in", own)
	}
	models := r["models"].([]any)
	if len(models) != 1 || models[0].(map[string]any)["inputTokens"] != float64(330) || models[0].(map[string]any)["model"] == "" {
		t.Errorf("models %v", models)
	}
	children := r["children"].([]any)
	if len(children) != 1 {
		t.Fatalf("children %v", children)
	}
	ch := children[0].(map[string]any)
	if ch["label"] != "Helper" || ch["outcome"] != "completed" || ch["usage"].(map[string]any)["inputTokens"] != float64(30) || ch["parentId"] != r["sessionId"] {
		t.Errorf("child %v", ch)
	}
}

// Each exit status, with its cause on stderr and the outcome in the
// result line.
func TestExecExitStatuses(t *testing.T) {
	failingChild := `model:
  main:
    - tool_calls:
        - {id: call_bg, name: subagent, arguments: '{"description": "Doomed", "prompt": "Try.", "run_in_background": true}'}
    - text: STARTED
    - text: NOTED
  Doomed:
    - error: "HTTP 401: the fake provider rejects this key"
`
	tests := []struct {
		name, script string
		args         []string
		code         int
		outcome      string
		stderr       string
	}{
		{name: "done", script: "model:\n  main:\n    - text: OK\n", code: cli.ExitOK, outcome: "done"},
		{name: "provider error", script: "model:\n  main:\n    - error: \"HTTP 500: boom\"\n", code: cli.ExitError, outcome: "failed", stderr: "boom"},
		{name: "refusal", script: "model:\n  main:\n    - text: I will not\n      finish: content-filter\n", code: cli.ExitRefused, outcome: "refused", stderr: "the model refused"},
		{name: "max_tokens", script: "model:\n  main:\n    - text: cut\n      finish: length\n", code: cli.ExitRefused, outcome: "stopped", stderr: "max_tokens"},
		{name: "limit", script: "model:\n  main:\n    - tool_calls:\n        - {id: c, name: todo, arguments: '{\"todos\": []}'}\n    - text: X\n", args: []string{"--max-turns", "1"}, code: cli.ExitLimit, outcome: "limit", stderr: "max-steps"},
		{name: "failed background child", script: failingChild, args: []string{"--wait-children"}, code: cli.ExitError, outcome: "failed", stderr: "the fake provider rejects this key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			code, out, errOut := e.runScript(tt.script, "", append(append([]string{"--output", "jsonl"}, tt.args...), "Go")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, errOut)
			}
			r := resultOf(t, out)
			if r["outcome"] != tt.outcome || r["exitStatus"] != float64(tt.code) {
				t.Errorf("result line %v, want outcome %s", r, tt.outcome)
			}
			if tt.code != cli.ExitOK && r["error"] == nil {
				t.Errorf("result line without the error: %v", r)
			}
		})
	}
	// Without --wait-children a failed background child is still said
	// on stderr once it failed within the run.
}

// failingWriter fails every write after the first n bytes, as stdout
// does once its reader went away (EPIPE).
type failingWriter struct {
	mu     sync.Mutex
	n      int
	writes int
	data   strings.Builder
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.data.Len()+len(p) > w.n {
		return 0, errors.New("write |1: broken pipe")
	}
	w.data.Write(p)
	return len(p), nil
}

// A reader of stdout that goes away (exec ... | head) ends the run
// cleanly: the turn is cancelled and logged as aborted, exit 3.
func TestExecBrokenStdoutEndsTheRunCleanly(t *testing.T) {
	e := newExecEnv(t)
	script := writeScript(t, `model:
  main:
    - text: first words
      hang: true
`)
	w := &failingWriter{n: 0}
	var errOut strings.Builder
	args := []string{"exec", "--cwd", e.cwd, "--model", "script:" + script, "--output", "jsonl", "Go"}
	code := cli.Run(context.Background(), e.process, args, strings.NewReader(""), w, &errOut, func(k string) string { return e.vars[k] })
	if code != cli.ExitRefused {
		t.Fatalf("exit %d, want 3\n%s", code, errOut.String())
	}
	files := sessionFiles(t, e)
	if len(files) != 1 {
		t.Fatalf("sessions %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), `"kind":"aborted"`) {
		t.Fatalf("the turn is not logged as aborted:\n%s", data)
	}
}

// A signal before the session exists ends the run with exit 3 and a
// message, and leaves no session behind.
func TestExecSignalBeforeTheSession(t *testing.T) {
	e := newExecEnv(t)
	e.process = cli.Process{
		Notify: func(c chan<- os.Signal) { c <- os.Interrupt },
		Stop:   func(chan<- os.Signal) {},
		Exit:   func(int) { t.Error("exited at once") },
	}
	code, _, errOut := e.runScript("model:\n  main:\n    - text: never\n", "", "Go")
	if code != cli.ExitRefused || !strings.Contains(errOut, "cancelled before the session was created") {
		t.Fatalf("exit %d, want 3 with a message\n%s", code, errOut)
	}
	if files := sessionFiles(t, e); len(files) != 0 {
		t.Fatalf("a session was left: %v", files)
	}
}

// Piped stdin with a prompt reaches the model as context of the prompt.
func TestExecPipedStdinWithAPrompt(t *testing.T) {
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{text: "Reviewed."})
	code, out, errOut := e.run(p, "diff --git a/x b/x\n+added line\n", "Review this diff")
	if code != cli.ExitOK || out != "Reviewed.\n" {
		t.Fatalf("exit %d, stdout %q\n%s", code, out, errOut)
	}
	body := p.bodies()[0]
	if !strings.Contains(body, "Review this diff") || !strings.Contains(body, "+added line") || !strings.Contains(body, "\\u003cstdin\\u003e") && !strings.Contains(body, "<stdin>") {
		t.Fatalf("the request lacks the prompt or the piped context:\n%s", body)
	}
}

// --bare ignores the user's settings (here a deny rule and an
// instructions file): the run does not depend on the machine.
func TestExecBare(t *testing.T) {
	e := newExecEnv(t)
	e.userSettings(`{"permissions": {"deny": ["write"]}}`)
	putFile(t, filepath.Join(e.vars["XDG_CONFIG_HOME"], "acp-agent", "AGENTS.md"), "USER-INSTRUCTIONS-MARKER\n")
	putFile(t, filepath.Join(e.vars["XDG_CONFIG_HOME"], "acp-agent", "agents", "user-helper.md"), "---\nname: user-helper\ndescription: USER-AGENT-MARKER\n---\nHelp.\n")
	write := reply{toolName: "write", toolArgs: `{"path":"n.txt","content":"x"}`}
	for _, bare := range []bool{false, true} {
		p := newFakeProvider(t, write, reply{text: "Done."})
		args := []string{"--mode", "accept-edits"}
		if bare {
			args = append(args, "--bare")
		}
		os.Remove(filepath.Join(e.cwd, "n.txt"))
		code, _, errOut := e.run(p, "", append(args, "Write")...)
		if code != cli.ExitOK {
			t.Fatalf("bare=%v: exit %d\n%s", bare, code, errOut)
		}
		_, err := os.Stat(filepath.Join(e.cwd, "n.txt"))
		if written := err == nil; written != bare {
			t.Errorf("bare=%v: written=%v (the user's deny rule applies only without --bare)", bare, written)
		}
		first := p.bodies()[0]
		for _, marker := range []string{"USER-INSTRUCTIONS-MARKER", "USER-AGENT-MARKER"} {
			if strings.Contains(first, marker) == bare {
				t.Errorf("bare=%v: the request holds %s = %v", bare, marker, !bare)
			}
		}
	}
}

// --log-level after exec is honoured (as before it).
func TestExecLogLevelAfterTheCommand(t *testing.T) {
	e := newExecEnv(t)
	code, _, errOut := e.runScript("model:\n  main:\n    - text: OK\n", "", "--log-level", "info", "Go")
	if code != cli.ExitOK || !strings.Contains(errOut, "level=INFO") {
		t.Fatalf("exit %d; stderr without info lines:\n%s", code, errOut)
	}
}

// A run that fails before its first prompt (the key is missing) leaves
// no session behind, and says why on stderr.
func TestExecMissingKeyLeavesNoSession(t *testing.T) {
	e := newExecEnv(t)
	delete(e.vars, "FAKE_KEY")
	p := newFakeProvider(t, reply{text: "never"})
	code, _, errOut := e.run(p, "", "Hello")
	if code != cli.ExitUsage || !strings.Contains(errOut, "FAKE_KEY") {
		t.Fatalf("exit %d, want 2 naming the variable\n%s", code, errOut)
	}
	if files := sessionFiles(t, e); len(files) != 0 {
		t.Fatalf("a session was left: %v", files)
	}
}

// An MCP tool call gets its closing tool_call_update in the jsonl; an
// MCP server that cannot start is said on stderr.
func TestExecMCPCallClosesAndBrokenServerIsSaid(t *testing.T) {
	srv, err := mcptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	servers := fmt.Sprintf(`[{"type":"http","name":"demo","url":"%s/demo","headers":[]},{"type":"http","name":"gone","url":"http://127.0.0.1:1/mcp","headers":[]}]`, srv.URL)
	e := newExecEnv(t)
	p := newFakeProvider(t, reply{toolName: "mcp__demo__echo", toolArgs: `{"text":"hello from mcp"}`}, reply{text: "Echoed."})
	code, out, errOut := e.run(p, "", "--output", "jsonl", "--mcp-config", servers, "Echo it")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var id string
	closed := false
	for _, u := range updates(t, out) {
		up := u["update"].(map[string]any)
		switch kindOf(u) {
		case "tool_call":
			id, _ = up["toolCallId"].(string)
		case "tool_call_update":
			if up["toolCallId"] == id && (up["status"] == "completed" || up["status"] == "failed") {
				closed = true
			}
		}
	}
	if id == "" || !closed {
		t.Fatalf("the MCP call (id %q) has no closing update:\n%s\n%s", id, out, errOut)
	}
	if !strings.Contains(errOut, "gone") {
		t.Fatalf("stderr does not say the MCP server gone could not start:\n%s", errOut)
	}
}

// The headless client names the MCP failure notice's _meta itself: the
// two must agree.
func TestExecKnowsTheMCPFailureNotice(t *testing.T) {
	if acp.MetaNotice != "acp-agent/notice" || acp.NoticeMCPServerFailed != "mcp-server-failed" {
		t.Fatal("acp's MCP failure notice changed: update app/headless to match")
	}
}
