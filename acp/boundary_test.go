package acp_test

// Tests of the workspace boundary through the real connection: a change
// to a path outside the cwd is decided before the file is touched, so no
// answer, update, log line or client request depends on what it holds.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
)

const secretText = "SECRET-needle-CONTENT"

// oracleScript makes the model probe an outside file with edits whose
// success would depend on its content, and a write of its exact content.
func oracleScript(path string) string {
	calls := []string{
		fmt.Sprintf(`edit|{"path":%q,"old_string":"needle","new_string":"x"}`, path),
		fmt.Sprintf(`edit|{"path":%q,"old_string":"absent","new_string":"x"}`, path),
		fmt.Sprintf(`edit|{"path":%q,"old_string":"E","new_string":"x","replace_all":true}`, path),
		fmt.Sprintf(`write|{"path":%q,"content":%q}`, path, secretText+"\n"),
		fmt.Sprintf(`write|{"path":%q,"content":"other"}`, path+".missing"),
	}
	var b strings.Builder
	b.WriteString("model:\n  main:\n")
	for i, c := range calls {
		name, args, _ := strings.Cut(c, "|")
		fmt.Fprintf(&b, "    - tool_calls:\n        - id: call-%d\n          name: %s\n          arguments: '%s'\n", i+1, name, args)
	}
	b.WriteString("    - text: done\n")
	return b.String()
}

func TestOutsideChangeDecidedBeforeTouching(t *testing.T) {
	for _, mode := range []string{"plan", "default", "accept-edits"} {
		for _, fs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fs=%v", mode, fs), func(t *testing.T) {
				ctx := ctxFor(t)
				outside := filepath.Join(t.TempDir(), "secret.txt")
				if err := os.WriteFile(outside, []byte(secretText+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				c := newWSClient(fs, false) // every question is answered reject-once
				var dataDir string
				e := startWS(t, loadScript(t, oracleScript(outside)), c, func(cfg *app.Config, _ workspace.Resolver) { dataDir = cfg.DataDir })
				id := e.newSession(ctx, tempCwd(t))
				if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: acpsdk.SessionModeId(mode)}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.prompt(ctx, id, "go"); err != nil {
					t.Fatal(err)
				}
				wantCode, wantAsks := workspace.CodePermissionRejected, 5
				if mode == "plan" {
					wantCode, wantAsks = workspace.CodeModeForbids, 0
				}
				if n := len(c.requests()); n != wantAsks {
					t.Errorf("asked %d times, want %d", n, wantAsks)
				}
				for _, r := range c.requests() {
					if len(r.ToolCall.Content) != 0 || strings.Contains(*r.ToolCall.Title, "Create") {
						t.Errorf("question shows content or existence: %+v", r.ToolCall)
					}
				}
				c.mu.Lock()
				reads, writes := c.reads, c.writes
				c.mu.Unlock()
				if reads != 0 || writes != 0 {
					t.Errorf("the editor was asked %d reads and %d writes before any answer", reads, writes)
				}
				res := toolResults(e.rec.snapshot(id))
				for i := 1; i <= 5; i++ {
					raw, _ := json.Marshal(res[fmt.Sprintf("call-%d", i)].RawOutput)
					if !strings.Contains(string(raw), wantCode) {
						t.Errorf("call-%d: %s, want %s", i, raw, wantCode)
					}
				}
				for _, l := range e.tap.lines() {
					if strings.Contains(l, "SECRET") && !strings.Contains(l, `"content":"`+secretText) {
						t.Errorf("outside text on the wire: %.300s", l)
					}
				}
				_ = filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return nil
					}
					b, _ := os.ReadFile(p)
					for _, l := range strings.Split(string(b), "\n") {
						if strings.Contains(l, "SECRET") && !strings.Contains(l, `\"content\":\"`+secretText) {
							t.Errorf("outside text in %s: %.300s", filepath.Base(p), l)
						}
					}
					return nil
				})
				if b, _ := os.ReadFile(outside); string(b) != secretText+"\n" {
					t.Errorf("outside file changed: %q", b)
				}
			})
		}
	}
}
