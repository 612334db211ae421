package app

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// TestSystemPrompt_ProbedAheadIsTheSame: a session whose probe ran when
// its agent was created records the same system prompt as one that
// probes at its first prompt (the path without PrepareSystem), in a real
// git repository with uncommitted changes and outside git.
func TestSystemPrompt_ProbedAheadIsTheSame(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q", "-b", "trunk").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, "new.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cwd  string
		want string // a line the environment block must hold
	}{
		{name: "dirty git repository", cwd: repo, want: "Working tree: has uncommitted changes"},
		{name: "outside git", cwd: t.TempDir(), want: "Git repository: no"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scripted.Parse([]byte("model:\n  main:\n    - text: hi\n"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(Config{DataDir: t.TempDir(), Testing: &testhooks.Hooks{Model: scripted.New(sc), NoSync: true},
				Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler), Prompt: PromptConfig{UserInstructions: "-"}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			recorded := func(ahead bool) string {
				s, err := a.Sessions.Create(session.Header{Cwd: tc.cwd}, session.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				opts := a.AgentOptions(s)
				if opts.PrepareSystem == nil {
					t.Fatal("no PrepareSystem: the probe does not start with the session")
				}
				prepared := make(chan struct{})
				if ahead {
					prep := opts.PrepareSystem
					opts.PrepareSystem = func(ctx context.Context) { prep(ctx); close(prepared) }
				} else {
					opts.PrepareSystem = nil
				}
				ag := agent.New(s, opts)
				defer ag.Close(t.Context())
				if ahead {
					<-prepared
				}
				msg := session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("hi")}, Source: session.Source{Kind: session.SourceUser}}
				if _, err := ag.Prompt(t.Context(), msg); err != nil {
					t.Fatal(err)
				}
				text, ok, err := session.RecordedSystemPrompt(s.MustEvents())
				if err != nil || !ok {
					t.Fatalf("no recorded prompt (%v)", err)
				}
				return text
			}
			ahead, lazy := recorded(true), recorded(false)
			if ahead != lazy {
				t.Errorf("prompt probed ahead differs from the one probed at the first prompt:\n%s\n---\n%s", ahead, lazy)
			}
			if !strings.Contains(ahead, tc.want) {
				t.Errorf("environment block lacks %q:\n%s", tc.want, ahead)
			}
		})
	}
}
