package acp_test

// Tests of the workspace boundary through the real connection: a change
// to a path outside the cwd is decided before the file is touched, so no
// answer, update, log line or client request depends on what it holds.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A local command's marker is in the session log before it runs; a
// process still carrying it when the session is next loaded from storage
// (the agent that ran it died) is killed.
func TestLeftoverCommandKilledAtNextLoad(t *testing.T) {
	ctx := ctxFor(t)
	dataDir := t.TempDir()
	script := "model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: bash\n          arguments: '{\"command\":\"true\"}'\n    - text: done\n"
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, script), c, func(cfg *app.Config, _ workspace.Resolver) { cfg.DataDir = dataDir })
	cwd := tempCwd(t)
	id := e.newSession(ctx, cwd)
	if _, err := e.prompt(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	e.stop()
	marker := workspace.ProcessMarker(id, "call-1")
	var recorded bool
	_ = filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			recorded = recorded || strings.Contains(string(b), `"type":"`+workspace.TypeProcess+`"`) && strings.Contains(string(b), marker)
		}
		return nil
	})
	if !recorded {
		t.Fatalf("no %s event with %s in the log", workspace.TypeProcess, marker)
	}

	// What an agent killed mid-command leaves: a process with the marker,
	// outside any group the new agent knows.
	left := exec.Command("setsid", "sleep", "60")
	left.Env = append(os.Environ(), marker)
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = left.Wait(); close(exited) }()
	t.Cleanup(func() { _ = left.Process.Kill(); <-exited })
	// The leftover is what the test says only once setsid has become
	// sleep (mid-exec, /proc shows no environment): wait for that event.
	for {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", left.Process.Pid))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", left.Process.Pid))
		if strings.TrimSpace(string(comm)) == "sleep" && strings.Contains(string(env), marker) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the leftover process never became sleep")
		case <-time.After(time.Millisecond):
		}
	}

	e2 := startWS(t, loadScript(t, "model:\n  main:\n    - text: hi\n"), newWSClient(false, false), func(cfg *app.Config, _ workspace.Resolver) { cfg.DataDir = dataDir })
	if _, err := e2.cs.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(id), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the leftover process recorded in the log still runs after the load")
	}
}

// The file is swapped for a symlink to an outside file while the question
// "Edit inside.txt" is pending; allow-once then writes nothing outside,
// locally or through the editor's fs.
func TestSwapWhileQuestionPendingThroughConnection(t *testing.T) {
	for _, fs := range []bool{false, true} {
		for _, call := range []string{
			`edit|{"path":"inside.txt","old_string":"original","new_string":"changed"}`,
			`write|{"path":"inside.txt","content":"changed\n"}`,
		} {
			name, args, _ := strings.Cut(call, "|")
			t.Run(fmt.Sprintf("%s/fs=%v", name, fs), func(t *testing.T) {
				ctx := ctxFor(t)
				cwd := tempCwd(t)
				outside := filepath.Join(t.TempDir(), "target.txt")
				inside := filepath.Join(cwd, "inside.txt")
				for _, p := range []string{outside, inside} {
					if err := os.WriteFile(p, []byte("original\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				c := newWSClient(fs, false, "allow-once")
				c.onAsk = func(acpsdk.RequestPermissionRequest) {
					if err := os.Remove(inside); err != nil {
						t.Error(err)
					}
					if err := os.Symlink(outside, inside); err != nil {
						t.Error(err)
					}
				}
				script := fmt.Sprintf("model:\n  main:\n    - tool_calls:\n        - id: call-1\n          name: %s\n          arguments: '%s'\n    - text: done\n", name, args)
				e := startWS(t, loadScript(t, script), c)
				id := e.newSession(ctx, cwd)
				if _, err := e.prompt(ctx, id, "go"); err != nil {
					t.Fatal(err)
				}
				if n := len(c.requests()); n != 1 {
					t.Fatalf("asked %d times, want once", n)
				}
				if b, _ := os.ReadFile(outside); string(b) != "original\n" {
					t.Fatalf("outside file written: %q", b)
				}
				raw, _ := json.Marshal(toolResults(e.rec.snapshot(id))["call-1"].RawOutput)
				if !strings.Contains(string(raw), workspace.CodePathChanged) {
					t.Fatalf("result %s, want %s", raw, workspace.CodePathChanged)
				}
			})
		}
	}
}
