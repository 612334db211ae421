package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/internal/testhooks"
)

// newTestApp is the composition over dir with a scripted model (the
// commands read what it wrote).
func newTestApp(t *testing.T, dir, script string) *app.App {
	t.Helper()
	sc, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{DataDir: dir, Testing: &testhooks.Hooks{Model: scripted.New(sc), NoSync: true}, Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAgentsDefinitionsCommandPrintsDefinitionsAndProblems(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	writeFile(t, filepath.Join(dir, ".acp-agent", "agents", "reviewer.md"),
		"---\ndescription: Reviews a change\ntools: [read, grep]\nmodel: openai/gpt-5\nmode: foreground\nmaxTurns: 5\n---\nReview.\n")
	writeFile(t, filepath.Join(dir, ".acp-agent", "agents", "broken.md"), "---\ndescription: x\nmaxTurns: lots\n---\n")
	writeFile(t, filepath.Join(home, ".claude", "agents", "tester.md"), "---\nname: tester\ndescription: Runs tests\nisolation: worktree\n---\n")
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"agents", "--definitions", dir}, strings.NewReader(""), &out, &errb, getenv); code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	want := "Agent definitions of " + dir + " (2):\n" +
		"  reviewer — Reviews a change\n" +
		"      file: .acp-agent/agents/reviewer.md (project, acp-agent)\n" +
		"      model: openai/gpt-5, mode: foreground, isolation: none, maxTurns: 5\n" +
		"      tools: read, grep\n" +
		"  tester — Runs tests\n" +
		"      file: " + filepath.Join(home, ".claude", "agents", "tester.md") + " (user, claude)\n" +
		"      model: inherit, mode: background, isolation: worktree\n" +
		"Reported (1):\n" +
		"  [skipped] .acp-agent/agents/broken.md:3: maxTurns must be a positive whole number\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"agents", "--definitions", filepath.Join(dir, "nope")}, strings.NewReader(""), &out, &errb, getenv); code != ExitUsage {
		t.Errorf("missing directory: exit %d", code)
	}
}
