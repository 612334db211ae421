package acp_test

import (
	"fmt"
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

// TestAlwaysAllowEditSavedForTheProject: "always allow" on an edit is
// saved in the user-level settings file as a rule for the file's
// directory, scoped to the project, and the option says so: a later
// session in the project writes there without asking, still asks for
// another directory, and a session in another project asks.
func TestAlwaysAllowEditSavedForTheProject(t *testing.T) {
	ctx := ctxFor(t)
	userFile := filepath.Join(t.TempDir(), "acp-agent", "settings.json")
	withUser := func(cfg *app.Config, _ workspace.Resolver) { cfg.SettingsFile = userFile }
	project, other := tempCwd(t), tempCwd(t)
	write := func(calls ...string) string {
		s := "model:\n  main:\n    - tool_calls:\n"
		for i, p := range calls {
			s += fmt.Sprintf("        - {id: call-%d, name: write, arguments: '{\"path\":\"%s\",\"content\":\"x\"}'}\n", i, p)
		}
		return s + "    - text: done\n"
	}

	c := newWSClient(false, false, acp.OptionAllowAlways)
	e := startWS(t, loadScript(t, write("src/pkg/a.txt")), c, withUser)
	id := e.newSession(ctx, project)
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	asked := c.requests()
	if len(asked) != 1 {
		t.Fatalf("asked %d times", len(asked))
	}
	if name := asked[0].Options[1].Name; name != "Always allow edits under src/pkg/ in this project" {
		t.Errorf("always option named %q", name)
	}
	f, err := settings.ReadFile(userFile)
	if err != nil || len(f.Projects[project].Allow) != 1 || f.Projects[project].Allow[0] != "edit(src/pkg/**)" || len(f.Permissions.Allow) != 0 {
		t.Fatalf("saved as %+v (%v), want edit(src/pkg/**) scoped to %s", f, err, project)
	}
	e.stop()

	for _, tc := range []struct {
		name, cwd string
		calls     []string
		asks      int
	}{
		{"same directory, deeper, same project", project, []string{"src/pkg/b.txt", "src/pkg/sub/c.txt"}, 0},
		{"another directory", project, []string{"src/other.txt"}, 1},
		{"another project", other, []string{"src/pkg/b.txt"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWSClient(false, false, acp.OptionAllowOnce)
			e := startWS(t, loadScript(t, write(tc.calls...)), c, withUser)
			defer e.stop()
			id := e.newSession(ctx, tc.cwd)
			if _, err := e.prompt(ctx, id, "go"); err != nil {
				t.Fatal(err)
			}
			if n := len(c.requests()); n != tc.asks {
				t.Errorf("asked %d times, want %d", n, tc.asks)
			}
			for i, p := range tc.calls {
				if b, err := os.ReadFile(filepath.Join(tc.cwd, p)); err != nil || string(b) != "x" {
					t.Errorf("%s not written: %q %v (%+v)", p, b, err, toolResults(e.rec.snapshot(id))[fmt.Sprintf("call-%d", i)])
				}
			}
		})
	}
}
