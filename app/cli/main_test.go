package cli

import (
	"bytes"
	"context"
	"errors"
	"github.com/acp-agent/acp-agent/app"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noEnv(string) string { return "" }

func TestHelpDocumentsEveryFlagAndEnvVar(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errOut, noEnv); code != ExitOK {
		t.Fatalf("exit code %d, stderr %s", code, errOut.String())
	}
	help := out.String()
	for _, want := range []string{
		"--data-dir", "--model", "--base-url", "--api-key-env", "--log-level", "--version",
		EnvDataDir, EnvModel, EnvBaseURL, EnvAPIKeyEnv, EnvLogLevel,
		"DEEPSEEK_API_KEY", "OPENAI_API_KEY", "XDG_STATE_HOME", DeterministicEnv,
		"script:PATH", "sessions", "repeat it",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

// Boolean variables take the usual spellings, case-insensitive, and refuse
// the rest as a usage error (ACP_AGENT_SANDBOX=true once meant no sandbox);
// the numeric and duration variables of the context flags parse too.
func TestEnvironmentValues(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		sandbox bool
		bad     bool
	}{
		{env: map[string]string{EnvSandbox: "1"}, sandbox: true},
		{env: map[string]string{EnvSandbox: "TRUE"}, sandbox: true},
		{env: map[string]string{EnvSandbox: "Yes"}, sandbox: true},
		{env: map[string]string{EnvSandbox: "on"}, sandbox: true},
		{env: map[string]string{EnvSandbox: "0"}},
		{env: map[string]string{EnvSandbox: "False"}},
		{env: map[string]string{EnvSandbox: "no"}},
		{env: map[string]string{EnvSandbox: "OFF"}},
		{env: map[string]string{EnvSandbox: "enabled"}, bad: true},
		{env: map[string]string{EnvSandbox: "2"}, bad: true},
		{env: map[string]string{EnvContextWindow: "lots"}, bad: true},
		{env: map[string]string{EnvCompactThreshold: "most"}, bad: true},
		{env: map[string]string{EnvIdleTimeout: "90"}, bad: true},
	} {
		f, err := flagsFromEnv(func(k string) string { return tc.env[k] })
		var ue *UsageError
		if tc.bad != errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want usage error %v", tc.env, err, tc.bad)
			continue
		}
		if !tc.bad && f.Sandbox != tc.sandbox {
			t.Errorf("%v: sandbox = %v, want %v", tc.env, f.Sandbox, tc.sandbox)
		}
	}
	f, err := flagsFromEnv(func(k string) string {
		return map[string]string{EnvContextWindow: "200000", EnvCompactThreshold: "0.7", EnvIdleTimeout: "90s"}[k]
	})
	if err != nil || f.ContextWindow != 200000 || f.CompactThreshold != 0.7 || f.IdleTimeout != 90*time.Second {
		t.Errorf("context variables = %d %g %v, %v", f.ContextWindow, f.CompactThreshold, f.IdleTimeout, err)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	env := map[string]string{EnvDataDir: "/from/env", EnvLogLevel: "debug", EnvModel: "script:/env.yaml"}
	f, err := flagsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if f.DataDir != "/from/env" || f.LogLevel != "debug" || f.Model != "script:/env.yaml" {
		t.Fatalf("env not read: %+v", f)
	}
	if _, err := f.level(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"--log-level", "nonsense"}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] })
	if code != ExitUsage || out.Len() != 0 {
		t.Errorf("bad --log-level: exit %d, stdout %q", code, out.String())
	}
}

func TestSessionsCommandListsAndShows(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(app.Config{DataDir: dir, Testing: &testhooks.Hooks{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Sessions.Create(session.Header{Cwd: "/work/project"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msg := session.Message{ID: "m1", Role: session.RoleUser, Content: []session.Block{session.Text("fix the flaky test")}, Source: session.Source{Kind: session.SourceUser}}
	if _, err := s.Append(session.TypeUserMessage, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(session.TypeSessionTitle, session.TitleData{Title: "Fix the flaky test", Source: session.Source{Kind: "fallback"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(session.TypeSystemPrompt, session.SystemPromptData{Text: "You are acp-agent.\n<environment>\nWorking directory: /work/project\n</environment>\n"}); err != nil {
		t.Fatal(err)
	}
	other, err := a.Sessions.Create(session.Header{Cwd: "/work/other"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(session.TypeUserMessage, msg); err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions.Remove(other.ID()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append([]string{"--data-dir", dir}, args...), strings.NewReader(""), &out, &errOut, noEnv); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	table := run("sessions")
	for _, want := range []string{"ID", "TITLE", "CREATED", "UPDATED", "PARENT", s.ID(), "Fix the flaky test"} {
		if !strings.Contains(table, want) {
			t.Errorf("sessions table lacks %q:\n%s", want, table)
		}
	}
	if other := run("sessions", "--cwd", "/elsewhere"); strings.Contains(other, s.ID()) {
		t.Errorf("--cwd filter kept a session from another directory:\n%s", other)
	}
	show := run("sessions", "show", s.ID())
	for _, want := range []string{"session " + s.ID(), "cwd:     /work/project", "[user]", "fix the flaky test"} {
		if !strings.Contains(show, want) {
			t.Errorf("transcript lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "<environment>") {
		t.Errorf("the transcript prints the system prompt:\n%s", show)
	}
	if got, want := run("sessions", "show", "--system", s.ID()), "You are acp-agent.\n<environment>\nWorking directory: /work/project\n</environment>\n"; got != want {
		t.Errorf("show --system printed %q, want %q", got, want)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"--data-dir", dir, "sessions", "show", "--system", other.ID()}, strings.NewReader(""), &out, &errOut, noEnv); code == ExitOK || !strings.Contains(errOut.String(), "no recorded system prompt") {
		t.Errorf("show --system of a session without one: exit %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Main(context.Background(), []string{"--data-dir", dir, "sessions", "show", "../../etc"}, strings.NewReader(""), &out, &errOut, noEnv); code != ExitUsage {
		t.Errorf("hostile id: exit %d, want %d", code, ExitUsage)
	}
}

func TestVersionLineNamesModuleVersionAndCommit(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"installed at a version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5e47205abc"}, {Key: "vcs.modified", Value: "false"}}},
			"acp-agent v0.3.1 (commit 5e47205abc; go1.26.8)"},
		{"work tree with changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5e47205abc"}, {Key: "vcs.modified", Value: "true"}}},
			"acp-agent dev (commit 5e47205abc with local changes; go1.26.8)"},
		{"no VCS stamp", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"acp-agent dev (commit unknown: built without VCS information; go1.26.8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(&tt.bi); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
