package scenarios

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/app/cli"
)

func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(string) string { return "" }, Command())
	return code, out.String(), errOut.String()
}

func TestCommand(t *testing.T) {
	code, out, _ := runMain(t, "scenario", "list")
	if code != cli.ExitOK {
		t.Fatalf("list: exit %d", code)
	}
	for _, n := range Names() {
		sc, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		// Without a summary: the whole description, on one line.
		sum := summary(sc)
		if sum == "" || strings.Contains(sum, "\n") {
			t.Errorf("%s: want a one-line summary, got %q", n, sum)
		}
		if !strings.Contains(out, n+" ") || !strings.Contains(out, sum+"\n") {
			t.Errorf("list lacks %s with its whole summary:\n%s", n, out)
		}
	}
	code, out, _ = runMain(t, "scenario", "run", "prompt-cancel")
	if code != cli.ExitOK || !strings.HasPrefix(out, "Scenario prompt-cancel\n") || !strings.Contains(out, "stop reason cancelled") {
		t.Errorf("run: exit %d, output:\n%s", code, out)
	}
	for _, args := range [][]string{{"scenario"}, {"scenario", "run"}, {"scenario", "run", "no-such"}, {"scenario", "walk"}, {"scenario", "list", "x"}} {
		if code, out, errOut := runMain(t, args...); code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "Run 'acp-agent help scenario") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a usage error", args, code, out, errOut)
		}
	}
}

// A replay that never ends (a recorded hang nobody cancels) fails at
// scenario test's --timeout, naming the step it waited for.
func TestScenarioTestTimeoutNamesTheStep(t *testing.T) {
	dir := t.TempDir()
	script := "summary: hangs\nmodel:\n  main:\n    - text: thinking\n      hang: true\nsteps:\n  - initialize\n  - new_session\n  - prompt: Go\n"
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		code, _, errOut = runMain(t, "scenario", "test", "--dir", dir, "--update", "--timeout", "1s")
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("scenario test did not end at its timeout")
	}
	if code != cli.ExitError || !strings.Contains(errOut, "timed out after 1s") || !strings.Contains(errOut, "(prompt)") {
		t.Fatalf("exit %d, stderr %q: want 1, the timeout and the prompt step named", code, errOut)
	}
}
