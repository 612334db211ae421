package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

func newTestApp(t *testing.T, dir, script string) *App {
	t.Helper()
	sc, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{DataDir: dir, Testing: &testhooks.Hooks{Model: scripted.New(sc), NoSync: true}, Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestTurnEndWritesProjectionCacheServingTitles(t *testing.T) {
	dir := t.TempDir()
	a := newTestApp(t, dir, "model:\n  main:\n    - text: hello there\n")
	s, err := a.Sessions.Create(session.Header{Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := a.NewAgent(s)
	if err != nil {
		t.Fatal(err)
	}
	msg := session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("Summarize the design note please now")}, Source: session.Source{Kind: session.SourceUser}}
	if _, err := ag.Prompt(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	row := filepath.Join(dir, "projections", s.ID()+".json")
	if _, err := os.Stat(row); err != nil {
		t.Fatalf("no cache row after turn end: %v", err)
	}
	next, size, ok := a.Persist.Stored(s.ID())
	if !ok || next != int64(s.Len()) {
		t.Fatalf("stored %d events (ok=%v), live has %d", next, ok, s.Len())
	}
	title, ok := a.cachedTitle(s.Header(), size)
	if !ok || title != "Summarize the design note please" {
		t.Fatalf("cached title = %q, %v", title, ok)
	}
	// A stale size (the log grew) must not be trusted.
	if _, ok := a.cachedTitle(s.Header(), size+1); ok {
		t.Fatal("cache row trusted for a different log size")
	}
	if err := ag.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions.Remove(s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
