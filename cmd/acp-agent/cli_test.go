package main

// Golden tests of the command line as people meet it: every --help, the
// help command, and each usage error with its exit status. The command
// set is the binary's (app.Main with scenarios.Command), run in process.
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

	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/scenarios"
)

// cliRun runs the binary's command line in process and renders the exit
// status and both streams, with the data directory shown as DATA.
func cliRun(t *testing.T, data string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{app.EnvDataDir: data}
	code := app.Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }, scenarios.Command())
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
	}{
		// Help: at every level, by flag and by command; always exit 0 on stdout.
		{"help-root", []string{"--help"}, 0},
		{"help-root-h", []string{"-h"}, 0},
		{"help-command", []string{"help"}, 0},
		{"help-help", []string{"help", "help"}, 0},
		{"help-sessions", []string{"sessions", "--help"}, 0},
		{"help-sessions-show", []string{"sessions", "show", "--help"}, 0},
		{"help-agents", []string{"agents", "--help"}, 0},
		{"help-scenario", []string{"scenario", "--help"}, 0},
		{"help-scenario-list", []string{"scenario", "list", "--help"}, 0},
		{"help-scenario-run", []string{"scenario", "run", "--help"}, 0},
		{"help-by-command-sessions-show", []string{"help", "sessions", "show"}, 0},
		{"help-by-command-scenario-run", []string{"help", "scenario", "run"}, 0},
		// Usage errors: exit 2, stderr only, naming the help to read.
		{"usage-unknown-flag", []string{"--no-such-flag"}, 2},
		{"usage-unknown-command", []string{"frobnicate"}, 2},
		{"usage-unknown-flag-after-command", []string{"agents", "x", "--recursive"}, 2},
		{"usage-flag-of-another-command", []string{"scenario", "run", "--cwd", "x", "y"}, 2},
		{"usage-bad-log-level", []string{"--log-level", "loud"}, 2},
		{"usage-bad-model", []string{"--model", "nonsense"}, 2},
		{"usage-unknown-provider", []string{"--model", "acme/big"}, 2},
		{"usage-missing-base-url", []string{"--model", "openai-compatible/llama"}, 2},
		{"usage-bad-base-url", []string{"--model", "deepseek/deepseek-chat", "--base-url", "::bad"}, 2},
		{"usage-empty-script", []string{"--model", "script:"}, 2},
		{"usage-sessions-argument", []string{"sessions", "extra"}, 2},
		{"usage-sessions-model-flag", []string{"sessions", "--model", "x"}, 2},
		{"usage-sessions-show-no-id", []string{"sessions", "show"}, 2},
		{"usage-sessions-show-two-ids", []string{"sessions", "show", "a", "b"}, 2},
		{"usage-sessions-show-bad-id", []string{"sessions", "show", "../etc"}, 2},
		{"usage-agents-no-id", []string{"agents"}, 2},
		{"usage-agents-flag-only", []string{"agents", "--descendants"}, 2},
		{"usage-scenario-no-command", []string{"scenario"}, 2},
		{"usage-scenario-unknown-command", []string{"scenario", "walk"}, 2},
		{"usage-scenario-run-no-name", []string{"scenario", "run"}, 2},
		{"usage-scenario-run-unknown", []string{"scenario", "run", "no-such"}, 2},
		{"usage-help-unknown", []string{"help", "nope"}, 2},
		{"usage-help-unknown-sub", []string{"help", "sessions", "nope"}, 2},
		// Failures: exit 1, saying what was not found.
		{"fail-sessions-show-unknown", []string{"sessions", "show", "no-such-session"}, 1},
		{"fail-agents-unknown", []string{"agents", "no-such-session"}, 1},
		{"fail-bad-script", []string{"--model", "script:SCRIPT"}, 1},
		{"fail-missing-script", []string{"--model", "script:/no/such/script.yaml"}, 1},
	}
	g := goldie.New(t, goldie.WithFixtureDir("testdata/cli"), goldie.WithNameSuffix(".golden"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(script, []byte("model:\n  main: {}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := slicesReplace(tt.args, "SCRIPT", script)
			code, got := cliRun(t, dir, args...)
			got = strings.ReplaceAll(got, script, "SCRIPT")
			if code != tt.want {
				t.Errorf("exit %d, want %d\n%s", code, tt.want, got)
			}
			if tt.want != 0 && !strings.Contains(got, "--- stdout\n--- stderr\n") {
				t.Errorf("a failure wrote to stdout:\n%s", got)
			}
			for _, prefix := range []string{"persistence:", "openai:", "acp:", "app:", "scenarios:", "session:", "scripted:"} {
				if strings.Contains(got, prefix) {
					t.Errorf("output carries the package prefix %q:\n%s", prefix, got)
				}
			}
			if m := singleDash.FindString(got); m != "" && tt.name != "help-root-h" {
				t.Errorf("output names a single-dash flag %q:\n%s", m, got)
			}
			g.Assert(t, tt.name, []byte(got))
		})
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
