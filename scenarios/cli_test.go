package scenarios

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/app"
)

func TestCommand(t *testing.T) {
	var out bytes.Buffer
	env := &app.Env{Stdout: &out}
	cmd := Command()
	if err := cmd.Run(t.Context(), env, []string{"list"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range Names() {
		if !strings.Contains(out.String(), n+" ") {
			t.Errorf("list lacks %s:\n%s", n, out.String())
		}
	}
	out.Reset()
	if err := cmd.Run(t.Context(), env, []string{"run", "prompt-cancel"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "Scenario prompt-cancel\n") || !strings.Contains(out.String(), "stop reason cancelled") {
		t.Errorf("run output:\n%s", out.String())
	}
	for _, args := range [][]string{nil, {"run"}, {"run", "no-such"}, {"walk"}} {
		var ue *app.UsageError
		if err := cmd.Run(t.Context(), env, args); !errors.As(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}
