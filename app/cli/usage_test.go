package cli

import (
	"bytes"
	"context"
	"github.com/acp-agent/acp-agent/app"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// TestSessionsShowUsage: "sessions show" prints the tokens and cost of the
// session's own responses and of its subagent tree (a child and a
// grandchild), priced where the model is known.
func TestSessionsShowUsage(t *testing.T) {
	dir := t.TempDir()
	a, err := app.New(app.Config{DataDir: dir, Testing: &testhooks.Hooks{NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	reply := func(s *session.Session, provider, model string, in, cached, out int) {
		t.Helper()
		if _, err := s.Append(session.TypeAssistantMessage, session.AssistantMessageData{
			Turn: 1, Step: 1,
			Message: session.Message{ID: s.NewID(), Role: session.RoleAssistant, Content: []session.Block{session.Text("ok")},
				Source: session.Source{Kind: session.SourceModel, Provider: provider, Model: model}},
			Usage: &session.Usage{InputTokens: in, CacheReadTokens: cached, OutputTokens: out},
		}, session.WithSurface(session.AppendOp)); err != nil {
			t.Fatal(err)
		}
	}
	parent, err := a.Sessions.Create(session.Header{Cwd: "/p"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reply(parent, "deepseek", "deepseek-chat", 1_000_000, 500_000, 100_000)
	child, err := a.Sessions.Create(session.Header{Cwd: "/p", ParentSession: parent.ID(), DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reply(child, "deepseek", "deepseek-chat", 2_000_000, 0, 0)
	grand, err := a.Sessions.Create(session.Header{Cwd: "/p", ParentSession: child.ID(), DelegationDepth: 2}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reply(grand, "openai-compatible", "llama3", 10, 0, 5)
	other, err := a.Sessions.Create(session.Header{Cwd: "/p"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reply(other, "deepseek", "deepseek-chat", 7, 0, 7)
	for _, s := range []*session.Session{parent, child, grand, other} {
		if err := a.Sessions.Remove(s.ID()); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"--data-dir", dir, "sessions", "show", parent.ID()}, strings.NewReader(""), &out, &errOut, noEnv); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	// Own: 500k uncached at 0.28, 500k cached at 0.028, 100k output at 0.42 per million.
	own := "this session: 1 model responses (1 with counts): 1000000 input tokens (500000 cached), 100000 output tokens, cost $0.1960"
	// Tree: + child 2M uncached (0.56); the grandchild has no known price.
	tree := "with its 2 subagent(s): 3 model responses (3 with counts): 3000010 input tokens (500000 cached), 100005 output tokens, cost $0.7560 (1 responses without a known price)"
	for _, want := range []string{own, tree} {
		if !strings.Contains(got, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, got)
		}
	}
}
