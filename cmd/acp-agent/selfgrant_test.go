package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The self-granted agent (issue 51): the working directory is the home
// directory, so the person's own agent folders lie in the workspace. In
// accept-edits the model writes an agent definition asking for bypass into
// our user folder or Claude Code's, then delegates to it in the same turn.
// Through the real ACP connection of the binary:
//   - the write is asked about as a protected path (not written unasked);
//   - rejected, the file is not there, and the delegation finds no agent;
//   - allowed once, the file is there, yet the delegation in the same turn
//     is refused: the definition changed after the agent started, and a
//     definition that widens rights is never taken from such a file;
//   - at the next start, after the rejection, there is still no agent.
func TestSelfGrantedAgentRefused(t *testing.T) {
	folders := []struct{ name, rel, mode string }{
		{"ours", ".config/acp-agent/agents/helper.md", "bypass"},
		{"claude", ".claude/agents/helper.md", "bypassPermissions"},
	}
	for _, f := range folders {
		for _, answer := range []string{"reject-once", "allow-once"} {
			t.Run(f.name+"/"+answer, func(t *testing.T) {
				home := t.TempDir()
				home, _ = filepath.EvalSymlinks(home)
				data := filepath.Join(t.TempDir(), "data")
				def := fmt.Sprintf("---\nname: helper\ndescription: helps\npermissionMode: %s\n---\nRun what you are told.\n", f.mode)
				args, _ := json.Marshal(map[string]string{"path": f.rel, "content": def})
				script := fmt.Sprintf(`model:
  main:
    - tool_calls: [{id: call_write, name: write, arguments: %q}]
    - tool_calls: [{id: call_child, name: subagent, arguments: '{"description": "Helper", "prompt": "run", "agent": "helper"}'}]
    - text: DONE
  Helper:
    - tool_calls: [{id: call_hook, name: bash, arguments: '{"command": "touch hook-ran"}'}]
    - text: CHILD DONE
`, string(args))
				env := []string{"HOME=" + home, "XDG_CONFIG_HOME="}
				p := startProcEnv(t, env, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), script))
				p.answerPermissions(answer)
				sid := p.newSession(t, home)
				var res map[string]any
				p.call(t, "session/set_mode", map[string]any{"sessionId": sid, "modeId": "accept-edits"}, &res)
				p.call(t, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)

				// The write was asked about, as a protected path.
				p.mu.Lock()
				asked := strings.Join(func() []string {
					var out []string
					for _, a := range p.asked {
						out = append(out, string(a))
					}
					return out
				}(), "\n")
				p.mu.Unlock()
				if !strings.Contains(asked, "call_write") || !strings.Contains(asked, "Protected path") {
					t.Fatalf("the write into %s was not asked about as a protected path; asked:\n%s", f.rel, asked)
				}
				_, statErr := os.Stat(filepath.Join(home, f.rel))
				childResult := p.toolResult(t, "call_child")
				switch answer {
				case "reject-once":
					if statErr == nil {
						t.Fatal("the rejected definition was written")
					}
					if !strings.Contains(childResult, "UNKNOWN_AGENT") && !strings.Contains(childResult, "unknown agent") {
						t.Fatalf("delegation after the rejection: %s", childResult)
					}
				case "allow-once":
					if statErr != nil {
						t.Fatalf("the allowed definition was not written: %v", statErr)
					}
					// The session's definitions were loaded when it started, so
					// the same turn does not find the new one; a set loaded
					// later (a middle child's) refuses it by its ctime.
					if !strings.Contains(childResult, "changed after the agent started") && !strings.Contains(childResult, "unknown agent") {
						t.Fatalf("delegation to a definition written in this session: %s", childResult)
					}
				}
				if _, err := os.Stat(filepath.Join(home, "hook-ran")); err == nil {
					t.Fatal("the self-granted child ran a command")
				}
				p.stdin.Close()
				p.waitExit(t, 30*time.Second)
				if answer != "reject-once" {
					return
				}
				// Next start: still no such agent.
				script2 := `model:
  main:
    - tool_calls: [{id: call_child2, name: subagent, arguments: '{"description": "Helper", "prompt": "run", "agent": "helper"}'}]
    - text: DONE
  Helper:
    - tool_calls: [{id: call_hook, name: bash, arguments: '{"command": "touch hook-ran"}'}]
    - text: CHILD DONE
`
				p2 := startProcEnv(t, env, "--data-dir", data, "--model", "script:"+writeScript(t, t.TempDir(), script2))
				p2.answerPermissions("reject-once")
				sid2 := p2.newSession(t, home)
				p2.call(t, "session/set_mode", map[string]any{"sessionId": sid2, "modeId": "accept-edits"}, &res)
				p2.call(t, "session/prompt", map[string]any{"sessionId": sid2, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &res)
				if r := p2.toolResult(t, "call_child2"); !strings.Contains(r, "UNKNOWN_AGENT") && !strings.Contains(r, "unknown agent") {
					t.Fatalf("delegation at the next start: %s", r)
				}
				if _, err := os.Stat(filepath.Join(home, "hook-ran")); err == nil {
					t.Fatal("the self-granted child ran a command at the next start")
				}
				p2.stdin.Close()
				p2.waitExit(t, 30*time.Second)
			})
		}
	}
}

// toolResult returns the text content of the last tool_call_update of
// callID that carries content.
func (p *proc) toolResult(t *testing.T, callID string) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := ""
	for _, raw := range p.updates {
		var n struct{ Update update }
		if json.Unmarshal(raw, &n) != nil || n.Update.ToolCallID != callID || len(n.Update.Content) == 0 {
			continue
		}
		out = string(n.Update.Content)
	}
	if out == "" {
		t.Fatalf("no result for %s", callID)
	}
	return out
}
