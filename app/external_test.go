package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/driver/external"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/subagent"
)

// askingGate records the questions and answers them with answer.
type askingGate struct {
	asked  []workspace.PermissionRequest
	answer error
}

func (g *askingGate) Authorize(_ context.Context, req workspace.PermissionRequest) error {
	g.asked = append(g.asked, req)
	return g.answer
}

// A project definition naming a command is asked like a command before it
// runs (the exact command line, once per root session), refused in plan
// mode, and in bypass runs only with an allow rule of the person's own
// settings; a user definition is the person's own and is not asked.
func TestExternalCommandIsAskedBeforeItRuns(t *testing.T) {
	cwd := t.TempDir()
	settingsFile := filepath.Join(t.TempDir(), "settings.json")
	cmd := external.Command{Name: "helper", Command: "codex-acp", Args: []string{"--profile", "my work"}}
	line := "codex-acp --profile 'my work'"
	project := &subagent.AgentDefinition{Name: "helper", File: "/repo/.acp-agent/agents/helper.md", Scope: "project"}
	tests := []struct {
		name     string
		mode     policy.Mode
		rules    string
		answer   error
		wantErr  string
		wantAsks int
	}{
		{name: "default asks", mode: policy.ModeDefault, wantAsks: 1},
		{name: "accept-edits asks", mode: policy.ModeAcceptEdits, wantAsks: 1},
		{name: "rejected", mode: policy.ModeDefault, answer: &tool.Error{Code: workspace.CodePermissionRejected, Message: "the user rejected it"}, wantErr: "the user rejected it", wantAsks: 1},
		{name: "plan refuses", mode: policy.ModePlan, wantErr: "plan mode", wantAsks: 0},
		{name: "bypass without a rule refuses", mode: policy.ModeBypass, wantErr: "only when the person's settings allow it", wantAsks: 0},
		{name: "bypass with the person's rule runs", mode: policy.ModeBypass, rules: `{"permissions": {"allow": ["bash(codex-acp --profile 'my work')"]}}`, wantAsks: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := tt.rules
			if rules == "" {
				rules = `{}`
			}
			writeFile(t, settingsFile, rules)
			a := &App{Config: Config{SettingsFile: settingsFile}}
			g := &askingGate{answer: tt.answer}
			env := workspace.Env{Cwd: cwd, Permissions: g}
			err := a.decideExternal(context.Background(), project, cmd, tt.mode, "root-1", env)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.mode == policy.ModePlan {
				var te *tool.Error
				if !errors.As(err, &te) || te.Code != workspace.CodeModeForbids {
					t.Errorf("plan refusal code: %v", err)
				}
			}
			if len(g.asked) != tt.wantAsks {
				t.Fatalf("asked %d times, want %d", len(g.asked), tt.wantAsks)
			}
			if tt.wantAsks == 1 {
				q := g.asked[0]
				if q.Kind != workspace.KindExecute || q.Subject != line || !strings.Contains(q.Title, line) || !strings.Contains(q.Detail, line) {
					t.Errorf("question %+v does not show the exact command line %q", q, line)
				}
				// Asked once per root session: the next start (a cold
				// resume) runs without asking when it was allowed.
				err2 := a.decideExternal(context.Background(), project, cmd, tt.mode, "root-1", env)
				wantAgain := 1
				if tt.answer != nil {
					wantAgain = 2
				}
				if len(g.asked) != wantAgain {
					t.Errorf("second start asked %d times in all, want %d (err %v)", len(g.asked), wantAgain, err2)
				}
				if tt.answer == nil {
					_ = a.decideExternal(context.Background(), project, cmd, tt.mode, "root-2", env)
					if len(g.asked) != 2 {
						t.Errorf("another root session was not asked")
					}
				}
			}
		})
	}
	t.Run("user definition", func(t *testing.T) {
		a := &App{}
		approve := a.approveExternal(&subagent.AgentDefinition{Name: "mine", Scope: "user"})
		if err := approve(context.Background(), "child", cmd); err != nil {
			t.Fatalf("a user definition was refused: %v", err)
		}
	})
}

// The subagent catalog reads an external child's records by their type
// names (it must not import the driver): they are the driver's.
func TestExternalRecordTypesAgree(t *testing.T) {
	if subagent.TypeExternalSession != external.TypeExternal || subagent.TypeExternalNested != external.TypeNestedChild {
		t.Fatalf("record types differ: %q/%q vs %q/%q", subagent.TypeExternalSession, subagent.TypeExternalNested, external.TypeExternal, external.TypeNestedChild)
	}
}

// countingGate answers every question yes and counts the command ones.
type countingGate struct {
	mu    sync.Mutex
	asked []workspace.PermissionRequest
}

func (g *countingGate) Authorize(_ context.Context, req workspace.PermissionRequest) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, req)
	return nil
}

func (g *countingGate) starts() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, q := range g.asked {
		if q.Kind == workspace.KindExecute && strings.HasPrefix(q.CallID, "start-") {
			n++
		}
	}
	return n
}

// A continuable external child's process ends when the child settles; the
// next message starts the command again and loads the recorded session,
// and the person, who allowed the project's command once for the root
// session, is not asked again. A child under another root session is.
func TestExternalRestartInTheSameSessionIsNotAskedAgain(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fakeagent")
	if out, err := exec.Command("go", "build", "-o", bin, "../driver/external/testdata/fakeagent").CombinedOutput(); err != nil {
		t.Fatalf("build fakeagent: %v\n%s", err, out)
	}
	dir := t.TempDir()
	obs := filepath.Join(t.TempDir(), "observed.txt")
	env := map[string]string{"FAKE_MODE": "normal", "FAKE_OUT": obs, "PATH": os.Getenv("PATH")}
	g := &countingGate{}
	a, err := New(Config{DataDir: t.TempDir(), Testing: &testhooks.Hooks{NoSync: true},
		Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler),
		Getenv: func(k string) string { return env[k] },
		WrapWorkspace: func(workspace.Resolver) workspace.Resolver {
			return workspace.Static{Cwd: dir, Files: local.Files{}, Commands: local.Commands{}, Permissions: g}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	def := &subagent.AgentDefinition{Name: "helper", File: filepath.Join(dir, ".acp-agent/agents/helper.md"), Scope: "project",
		External: &subagent.ExternalCommand{Command: bin, Env: []string{"FAKE_MODE", "FAKE_OUT"}}}
	childOf := func(parent string) *session.Session {
		t.Helper()
		s, err := a.Sessions.Create(session.Header{Cwd: dir, ParentSession: parent, Origin: session.OriginSubagent, DelegationDepth: 1}, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// activate runs one activation of the child: built (as the runtime's
	// factory does on a cold resume), messaged, settled (its agent closes).
	activate := func(s *session.Session, text string) {
		t.Helper()
		ag, err := a.externalChild(s, subagent.ChildSpec{Mode: subagent.ModeContinuable, Label: "helper", Definition: def})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := ag.Prompt(ctx, session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(text)}}); err != nil {
			t.Fatal(err)
		}
		if err := ag.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	root, err := a.Sessions.Create(session.Header{Cwd: dir}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := childOf(root.ID())
	activate(child, "first")
	activate(child, "second")
	b, _ := os.ReadFile(obs)
	if seen := string(b); strings.Count(seen, "initialize") != 2 || !strings.Contains(seen, "load fake-1") || !strings.Contains(seen, "prompt second") {
		t.Fatalf("the second message did not start the command again and load its session:\n%s", seen)
	}
	if n := g.starts(); n != 1 {
		t.Fatalf("the command line was asked %d times in one root session, want 1", n)
	}
	other, err := a.Sessions.Create(session.Header{Cwd: dir}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	activate(childOf(other.ID()), "elsewhere")
	if n := g.starts(); n != 2 {
		t.Fatalf("a child of another root session was asked %d times in all, want 2", n)
	}
}
