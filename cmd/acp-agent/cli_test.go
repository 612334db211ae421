package main

// Golden tests of the command line as people meet it: every --help, the
// help command, and each usage error with its exit status. The command
// set is the binary's (cli.Main with scenarios.Command), run in process.
// Refresh with GOLDIE_UPDATE=1 and read the diff.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sebdah/goldie/v2"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app/cli"
	"github.com/acp-agent/acp-agent/scenarios"
)

// cliRun runs the binary's command line in process and renders the exit
// status and both streams, with the data directory shown as DATA.
func cliRun(t *testing.T, data string, args ...string) (int, string) {
	t.Helper()
	return cliRunEnv(t, data, nil, args...)
}

// cliRunEnv is cliRun with more environment variables.
func cliRunEnv(t *testing.T, data string, more map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{cli.EnvDataDir: data}
	for k, v := range more {
		env[k] = v
	}
	code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }, scenarios.Command())
	norm := func(s string) string { return strings.ReplaceAll(s, data, "DATA") }
	return code, fmt.Sprintf("$ acp-agent %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), code, norm(out.String()), norm(errOut.String()))
}

// singleDash finds a flag spelled with one dash ("-model"), which the
// command line never prints.
var singleDash = regexp.MustCompile(`(^|\s)-[a-z][a-z-]+`)

func TestCLIHelpAndUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		env  map[string]string
		// damaged writes an unreadable session log in the data directory.
		damaged bool
	}{
		// Help: at every level, by flag and by command; always exit 0 on stdout.
		{name: "help-root", args: []string{"--help"}, want: 0},
		{name: "help-root-h", args: []string{"-h"}, want: 0},
		{name: "help-command", args: []string{"help"}, want: 0},
		{name: "help-help", args: []string{"help", "help"}, want: 0},
		{name: "help-sessions", args: []string{"sessions", "--help"}, want: 0},
		{name: "help-sessions-show", args: []string{"sessions", "show", "--help"}, want: 0},
		{name: "help-agents", args: []string{"agents", "--help"}, want: 0},
		{name: "help-scenario", args: []string{"scenario", "--help"}, want: 0},
		{name: "help-scenario-list", args: []string{"scenario", "list", "--help"}, want: 0},
		{name: "help-scenario-run", args: []string{"scenario", "run", "--help"}, want: 0},
		{name: "help-by-command-sessions-show", args: []string{"help", "sessions", "show"}, want: 0},
		{name: "help-by-command-scenario-run", args: []string{"help", "scenario", "run"}, want: 0},
		// Usage errors: exit 2, stderr only, naming the help to read.
		{name: "usage-unknown-flag", args: []string{"--no-such-flag"}, want: 2},
		{name: "usage-unknown-command", args: []string{"frobnicate"}, want: 2},
		{name: "usage-record-before-command", args: []string{"--record", "x", "sessions"}, want: 2},
		{name: "usage-unknown-flag-after-command", args: []string{"agents", "x", "--recursive"}, want: 2},
		{name: "usage-flag-of-another-command", args: []string{"scenario", "run", "--cwd", "x", "y"}, want: 2},
		{name: "usage-bad-log-level", args: []string{"--log-level", "loud"}, want: 2},
		{name: "usage-bad-model", args: []string{"--model", "nonsense"}, want: 2},
		{name: "usage-unknown-provider", args: []string{"--model", "acme/big"}, want: 2},
		{name: "usage-missing-base-url", args: []string{"--model", "openai-compatible/llama"}, want: 2},
		{name: "usage-bad-base-url", args: []string{"--model", "deepseek/deepseek-chat", "--base-url", "::bad"}, want: 2},
		{name: "usage-empty-script", args: []string{"--model", "script:"}, want: 2},
		{name: "usage-sessions-argument", args: []string{"sessions", "extra"}, want: 2},
		{name: "usage-sessions-model-flag", args: []string{"sessions", "--model", "x"}, want: 2},
		{name: "usage-sessions-show-no-id", args: []string{"sessions", "show"}, want: 2},
		{name: "usage-sessions-show-two-ids", args: []string{"sessions", "show", "a", "b"}, want: 2},
		{name: "usage-sessions-show-bad-id", args: []string{"sessions", "show", "../etc"}, want: 2},
		{name: "usage-agents-no-id", args: []string{"agents"}, want: 2},
		{name: "usage-agents-flag-only", args: []string{"agents", "--descendants"}, want: 2},
		{name: "usage-scenario-no-command", args: []string{"scenario"}, want: 2},
		{name: "usage-scenario-unknown-command", args: []string{"scenario", "walk"}, want: 2},
		{name: "usage-scenario-run-no-name", args: []string{"scenario", "run"}, want: 2},
		{name: "usage-scenario-run-unknown", args: []string{"scenario", "run", "no-such"}, want: 2},
		{name: "usage-help-unknown", args: []string{"help", "nope"}, want: 2},
		{name: "usage-help-unknown-sub", args: []string{"help", "sessions", "nope"}, want: 2},
		// Global flags are checked before a command too; typos get the
		// nearest command; the flag package's single-dash wording is not
		// shown; a boolean variable takes the usual spellings only.
		{name: "usage-global-model-before-command", args: []string{"--model", "nosuch/x", "sessions"}, want: 2},
		{name: "usage-global-bad-threshold-before-command", args: []string{"--compact-threshold", "2", "sessions"}, want: 2},
		{name: "usage-unknown-command-suggest", args: []string{"sesions"}, want: 2},
		{name: "usage-unknown-subcommand-suggest", args: []string{"scenario", "lst"}, want: 2},
		{name: "usage-help-unknown-suggest", args: []string{"help", "agnets"}, want: 2},
		{name: "usage-sessions-cwd-no-value", args: []string{"sessions", "-cwd"}, want: 2},
		{name: "usage-bad-sandbox-env", args: []string{"sessions"}, want: 2, env: map[string]string{cli.EnvSandbox: "enabled"}},
		{name: "usage-bad-idle-timeout-env", args: []string{"sessions"}, want: 2, env: map[string]string{cli.EnvIdleTimeout: "90"}},
		// Data commands: an empty listing names the directory it read; a
		// damaged log keeps the table narrow; no log line on top.
		{name: "sessions-empty", args: []string{"sessions"}, want: 0},
		{name: "sessions-damaged-narrow", args: []string{"sessions"}, want: 0, damaged: true},
		{name: "sessions-show-damaged-suggests-repair", args: []string{"sessions", "show", "broken-session-with-a-long-id"}, want: 1, damaged: true},
		{name: "sessions-repair-declined", args: []string{"sessions", "repair", "broken-session-with-a-long-id"}, want: 1, damaged: true},
		// Failures: exit 1, saying what was not found.
		{name: "fail-sessions-show-unknown", args: []string{"sessions", "show", "no-such-session"}, want: 1},
		{name: "fail-agents-unknown", args: []string{"agents", "no-such-session"}, want: 1},
		{name: "fail-bad-script", args: []string{"--model", "script:SCRIPT"}, want: 1},
		{name: "fail-missing-script", args: []string{"--model", "script:/no/such/script.yaml"}, want: 1},
	}
	g := goldie.New(t, goldie.WithFixtureDir("testdata/cli"), goldie.WithNameSuffix(".golden"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(script, []byte("model:\n  main: {}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.damaged {
				writeDamaged(t, dir)
			}
			args := slicesReplace(tt.args, "SCRIPT", script)
			code, got := cliRunEnv(t, dir, tt.env, args...)
			got = strings.ReplaceAll(got, script, "SCRIPT")
			if code != tt.want {
				t.Errorf("exit %d, want %d\n%s", code, tt.want, got)
			}
			if tt.want != 0 && !tt.damaged && !strings.Contains(got, "--- stdout\n--- stderr\n") {
				t.Errorf("a failure wrote to stdout:\n%s", got)
			}
			for _, prefix := range []string{"persistence:", "openai:", "acp:", "app:", "scenarios:", "session:", "scripted:"} {
				if strings.Contains(got, prefix) {
					t.Errorf("output carries the package prefix %q:\n%s", prefix, got)
				}
			}
			_, output, _ := strings.Cut(got, "\n") // not the command line itself
			if m := singleDash.FindString(output); m != "" && tt.name != "help-root-h" {
				t.Errorf("output names a single-dash flag %q:\n%s", m, got)
			}
			g.Assert(t, tt.name, []byte(got))
		})
	}
}

// writeDamaged writes a session log whose second line is not JSON, with an
// id long enough that a whole reason would widen the sessions table.
func writeDamaged(t *testing.T, data string) {
	t.Helper()
	sdir := filepath.Join(data, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "broken-session-with-a-long-id"
	line, err := session.MarshalHeaderLine(session.Header{ID: id, CreatedAt: 1_700_000_000_000, Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	body := string(line) + "\n{this is not json}\n" + `{"type":"turn/start","seq":0,"time":1700000000000,"data":{"turn":1}}` + "\n"
	path := filepath.Join(sdir, id+".jsonl")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// A fixed modification time: the UPDATED column is in the golden.
	when := time.UnixMilli(1_700_000_100_000)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}

func TestVersionNamesModuleVersionAndCommit(t *testing.T) {
	code, got := cliRun(t, t.TempDir(), "--version")
	if code != 0 || !strings.Contains(got, "acp-agent ") || !strings.Contains(got, "commit") || !strings.Contains(got, "go1.") {
		t.Errorf("--version:\n%s", got)
	}
}

// TestBinaryStartsWithoutTheKey is the first contact of the issue: a real
// provider configured, its key unset. The process serves anyway, names
// the variable in initialize and answers a prompt with AUTH_REQUIRED; it
// exits 0 when the editor closes stdin.
func TestBinaryStartsWithoutTheKey(t *testing.T) {
	dir := t.TempDir()
	p := startProcEnv(t, []string{"DEEPSEEK_API_KEY="}, "--data-dir", filepath.Join(dir, "data"), "--model", "deepseek/deepseek-chat")
	var init struct {
		AuthMethods []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Vars []struct {
				Name string `json:"name"`
			} `json:"vars"`
		} `json:"authMethods"`
	}
	p.call(t, "initialize", map[string]any{"protocolVersion": 1}, &init)
	if len(init.AuthMethods) != 1 || init.AuthMethods[0].Type != "env_var" || len(init.AuthMethods[0].Vars) != 1 || init.AuthMethods[0].Vars[0].Name != "DEEPSEEK_API_KEY" {
		t.Errorf("authMethods = %+v, want one env_var method naming DEEPSEEK_API_KEY", init.AuthMethods)
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	p.call(t, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var res map[string]any
	err := p.conn.Call(ctx, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}, &res)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != -32000 || !strings.Contains(je.Message, "DEEPSEEK_API_KEY") {
		t.Errorf("prompt without the key = %v, want -32000 naming DEEPSEEK_API_KEY", err)
	}
	err = p.conn.Call(ctx, "authenticate", map[string]any{"methodId": "DEEPSEEK_API_KEY"}, &res)
	if !errors.As(err, &je) || je.Code != -32000 {
		t.Errorf("authenticate with the key still unset = %v, want -32000", err)
	}
	if code, verdict := p.finish(t); code != 0 || verdict != nil {
		t.Errorf("exit %d, stdout verdict %v\nstderr:\n%s", code, verdict, p.stderr)
	}
}
