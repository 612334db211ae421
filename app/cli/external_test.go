package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentsDefinitionsShowsExternalAgents(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".acp-agent", "agents", "codex.md"),
		"---\ndescription: Codex over ACP\ncommand: codex-acp\nargs: [\"-c\", \"model=gpt-5 codex\"]\nenv: [OPENAI_API_KEY]\nloadSession: false\n---\n")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"agents", "--definitions", dir}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	want := "Agent definitions of " + dir + " (1):\n" +
		"  codex — Codex over ACP\n" +
		"      file: .acp-agent/agents/codex.md (project, acp-agent)\n" +
		"      external agent: codex-acp -c 'model=gpt-5 codex'\n" +
		"      env: OPENAI_API_KEY\n" +
		"      mode: background, isolation: none, loadSession: false\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
}
