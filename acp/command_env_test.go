package acp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
)

const envScript = `
model:
  main:
    - tool_calls:
        - {id: call-env, name: bash, arguments: '{"command":"echo k=${OPENAI_API_KEY:-none} t=${MY_SERVICE_TOKEN:-none} p=${ACP_TEST_PLAIN:-none}"}'}
    - text: done
`

// TestCommandsSeeNoSecrets: with OPENAI_API_KEY and MY_SERVICE_TOKEN in
// the agent's environment, a command sees neither, run locally or in the
// client's terminal (which starts from the editor's environment: the
// agent removes them there); other variables pass.
func TestCommandsSeeNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("MY_SERVICE_TOKEN", "tok-secret")
	t.Setenv("ACP_TEST_PLAIN", "visible")
	for _, tc := range []struct {
		name     string
		terminal bool
	}{{"local", false}, {"client terminal", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			c := newWSClient(false, tc.terminal)
			e := startWS(t, loadScript(t, envScript), c)
			id := e.newSession(ctx, tempCwd(t))
			if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: acp.ModeBypass}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.prompt(ctx, id, "go"); err != nil {
				t.Fatal(err)
			}
			u := toolResults(e.rec.snapshot(id))["call-env"]
			if u == nil {
				t.Fatal("no result")
			}
			raw, _ := json.Marshal(u.RawOutput)
			var text strings.Builder
			for _, cc := range u.Content {
				if cc.Content != nil && cc.Content.Content.Text != nil {
					text.WriteString(cc.Content.Content.Text.Text)
				}
			}
			out := text.String() + string(raw)
			if strings.Contains(out, "secret") || !strings.Contains(out, "k=none t=none p=visible") {
				t.Errorf("command output %q (raw %s)", text.String(), raw)
			}
		})
	}
}

// TestMalformedSettingsReportedAgentStarts: a project settings file that
// is not valid JSON is reported to the user after session/new (file, line,
// what is wrong); the session works and nothing of the file applies.
func TestMalformedSettingsReportedAgentStarts(t *testing.T) {
	ctx := ctxFor(t)
	cwd := tempCwd(t)
	writeFile(t, filepath.Join(cwd, ".acp-agent", "settings.json"), "{\n  \"permissions\": {\n    \"deny\": [\"bash\",]\n  }\n}\n")
	c := newWSClient(false, false)
	e := startWS(t, loadScript(t, envScript), c)
	id := e.newSession(ctx, cwd)
	awaitCommands(t, ctx, e.env, id)
	notices := strings.Join(transcript(e.rec.snapshot(id)), "\n")
	want := filepath.Join(cwd, ".acp-agent", "settings.json") + ":3: not valid JSON"
	if !strings.Contains(notices, "Settings file not applied") || !strings.Contains(notices, want) {
		t.Fatalf("no report naming %q:\n%s", want, notices)
	}
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: acp.ModeBypass}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	// The deny rule of the broken file is not applied: bash runs.
	if u := toolResults(e.rec.snapshot(id))["call-env"]; u == nil || *u.Status != acpsdk.ToolCallStatusCompleted {
		t.Errorf("bash under a broken settings file: %+v", u)
	}
}
