package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
)

const alwaysScript = `
model:
  main:
    - tool_calls:
        - {id: call-test, name: bash, arguments: '{"command":"echo tested","description":"Run the tests"}'}
    - text: done
`

// TestAlwaysAllowSavedForTheProject: "always allow" on a command is saved
// in the user-level settings file as a rule scoped to the project
// directory: a later session in the same project (also after a restart)
// runs the command without asking; a session in another project asks.
func TestAlwaysAllowSavedForTheProject(t *testing.T) {
	ctx := ctxFor(t)
	userFile := filepath.Join(t.TempDir(), "acp-agent", "settings.json")
	withUser := func(cfg *app.Config, _ workspace.Resolver) { cfg.SettingsFile = userFile }
	project, other := tempCwd(t), tempCwd(t)

	c := newWSClient(false, false, acp.OptionAllowAlways)
	e := startWS(t, loadScript(t, alwaysScript), c, withUser)
	id := e.newSession(ctx, project)
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	asked := c.requests()
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	if name := asked[0].Options[1].Name; name != "Always allow exactly this command in this project" {
		t.Errorf("always option named %q", name)
	}
	raw, err := os.ReadFile(userFile)
	if err != nil || !strings.Contains(string(raw), `"bash(echo tested)"`) {
		t.Fatalf("user file %q %v", raw, err)
	}
	f, err := settings.ReadFile(userFile)
	if err != nil || len(f.Projects[project].Allow) != 1 || len(f.Permissions.Allow) != 0 {
		t.Fatalf("saved as %+v (%v), want one rule scoped to %s", f, err, project)
	}
	e.stop()

	for _, tc := range []struct {
		cwd  string
		asks int
	}{{project, 0}, {other, 1}} {
		c := newWSClient(false, false, acp.OptionAllowOnce)
		e := startWS(t, loadScript(t, alwaysScript), c, withUser)
		id := e.newSession(ctx, tc.cwd)
		if _, err := e.prompt(ctx, id, "go"); err != nil {
			t.Fatal(err)
		}
		if n := len(c.requests()); n != tc.asks {
			t.Errorf("session in %s asked %d times, want %d", tc.cwd, n, tc.asks)
		}
		if u := toolResults(e.rec.snapshot(id))["call-test"]; u == nil || *u.Status != acpsdk.ToolCallStatusCompleted {
			t.Errorf("the command did not run: %+v", u)
		}
		e.stop()
	}
}
