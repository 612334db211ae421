package cli_test

// Tests of exec's limits and of subagent budgets through the real
// composition: each limit ends the run with exit status 4 and its reason
// on stderr; a child's limits stop it with stop reason budget, seen by its
// parent; a call may not widen its definition's limits; a background
// child keeps its limits across a cold resume.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/app/cli"
)

func writeScript(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExecLimitsExitFour(t *testing.T) {
	twoSteps := `model:
  main:
    - tool_calls:
        - {id: call_1, name: todo, arguments: '{"todos": []}'}
      usage: {input: 100, output: 20}
    - text: DONE
`
	hang := `model:
  main:
    - text: thinking
      hang: true
`
	tests := []struct {
		name     string
		script   string
		settings string
		args     []string
		reason   string
	}{
		{name: "max-turns", script: twoSteps, args: []string{"--max-turns", "1"}, reason: "stop reason max-steps"},
		{name: "max-budget-usd", script: twoSteps, args: []string{"--max-budget-usd", "0.001"},
			settings: `{"prices": {"*": {"input": 10, "output": 10}}}`, reason: "stop reason budget"},
		{name: "timeout", script: hang, args: []string{"--timeout", "200ms"}, reason: "stop reason timeout"},
		{name: "tree maxTokens from settings", script: twoSteps,
			settings: `{"subagents": {"maxTokens": 100}}`, reason: "stop reason budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecEnv(t)
			if tt.settings != "" {
				e.userSettings(tt.settings)
			}
			args := append([]string{"--model", "script:" + writeScript(t, tt.script), "--mode", "bypass"}, tt.args...)
			code, out, errOut := e.run(nil, "", append(args, "Go")...)
			if code != cli.ExitLimit {
				t.Fatalf("exit %d, want %d\nstdout: %q\nstderr: %s", code, cli.ExitLimit, out, errOut)
			}
			if !strings.Contains(errOut, tt.reason) {
				t.Fatalf("stderr lacks %q:\n%s", tt.reason, errOut)
			}
		})
	}
}

// A foreground child with maxTokens stops with stop reason budget before
// its next request; its parent's model sees the reason, the limit and the
// child's usage in the tool result, and the run itself completes.
func TestExecChildBudgetSeenByTheParent(t *testing.T) {
	script := `model:
  main:
    - tool_calls:
        - id: call_child
          name: subagent
          arguments: '{"description": "Spender", "prompt": "Spend.", "run_in_background": false, "maxTokens": 100}'
    - text: PARENT_DONE
  Spender:
    - tool_calls:
        - {id: call_t, name: todo, arguments: '{"todos": []}'}
      usage: {input: 90, output: 30, cached: 40, reasoning: 5}
    - text: NEVER_SENT
`
	e := newExecEnv(t)
	args := []string{"--model", "script:" + writeScript(t, script), "--mode", "bypass", "--output", "jsonl", "Go"}
	code, out, errOut := e.run(nil, "", args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	for _, want := range []string{"stop reason budget", "used 120 tokens of its limit of 100 (maxTokens)",
		"Usage: 120 tokens (90 in, 30 out, 40 cached, 5 reasoning)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the parent's tool result lacks %q", want)
		}
	}
	if strings.Contains(out, "NEVER_SENT") {
		t.Error("the child made a request past its limit")
	}
}

// A call may narrow its definition's limits, never widen them.
func TestExecCallMayNotWidenTheDefinitionLimits(t *testing.T) {
	script := `model:
  main:
    - tool_calls:
        - id: call_wide
          name: subagent
          arguments: '{"description": "Wide", "prompt": "x", "agent": "capped", "run_in_background": false, "maxTokens": 500}'
    - tool_calls:
        - id: call_narrow
          name: subagent
          arguments: '{"description": "Narrow", "prompt": "x", "agent": "capped", "run_in_background": false, "maxTokens": 50}'
    - text: PARENT_DONE
  Narrow:
    - text: NARROW_DONE
`
	e := newExecEnv(t)
	dir := filepath.Join(e.cwd, ".acp-agent", "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: capped\ndescription: a capped helper\nmaxTokens: 100\nmaxCostUsd: 0.5\ntimeout: 10m\n---\nHelp.\n"
	if err := os.WriteFile(filepath.Join(dir, "capped.md"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", "script:" + writeScript(t, script), "--mode", "bypass", "--output", "jsonl", "Go"}
	code, out, errOut := e.run(nil, "", args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstderr: %s", code, errOut)
	}
	if !strings.Contains(out, "maxTokens 500 would widen the limit 100") {
		t.Errorf("the widening call was not refused:\n%s", out)
	}
	if !strings.Contains(out, "NARROW_DONE") {
		t.Errorf("the narrowing call did not run:\n%s", out)
	}
}

// A background child's limits are in its log: after a restart, a message
// that cold-resumes it finds it over its limit, and it stops with stop
// reason budget before any request; the parent's notice says so.
func TestExecLimitsSurviveAColdResume(t *testing.T) {
	script := `model:
  main:
    - tool_calls:
        - id: call_bg
          name: subagent
          arguments: '{"description": "Keeper", "prompt": "Work.", "maxTokens": 100}'
    - text: STARTED
    - text: NOTED
    - tool_calls:
        - id: call_again
          name: send_message
          arguments: '{"subagent_id": "$CHILD", "message": "More."}'
    - text: SENT
    - text: NOTED_AGAIN
  Keeper:
    - text: FIRST_DONE
      usage: {input: 100, output: 10}
    - text: NEVER_SENT
`
	e := newExecEnv(t)
	path := writeScript(t, script)
	base := []string{"--model", "script:" + path, "--mode", "bypass", "--wait-children", "--output", "jsonl"}
	code, out, errOut := e.run(nil, "", append(base, "Start")...)
	if code != cli.ExitOK {
		t.Fatalf("first run: exit %d\nstderr: %s", code, errOut)
	}
	sid, child := "", ""
	for _, u := range updates(t, out) {
		sid = u["sessionId"].(string)
		if s := strings.Index(fmtJSON(u), "started subagent "); s >= 0 && child == "" {
			rest := fmtJSON(u)[s+len("started subagent "):]
			child = rest[:strings.IndexAny(rest, `"\`)]
		}
	}
	if child == "" {
		t.Fatalf("no child id in the first run:\n%s", out)
	}
	// The second run resumes the parent; its send_message cold-resumes
	// the child (a new process: nothing of it is live).
	script = strings.ReplaceAll(script, "$CHILD", child)
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = e.run(nil, "", append(base, "--resume", sid, "Again")...)
	if code != cli.ExitOK {
		t.Fatalf("second run: exit %d\nstderr: %s\n%s", code, errOut, out)
	}
	_ = out
	data, err := os.ReadFile(filepath.Join(e.vars[cli.EnvDataDir], "sessions", child+".jsonl"))
	if err != nil {
		t.Fatalf("child log: %v", err)
	}
	log := string(data)
	if !strings.Contains(log, `"kind":"budget"`) || strings.Contains(log, "NEVER_SENT") {
		t.Fatalf("the resumed child did not stop at its limit:\n%s", log)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
