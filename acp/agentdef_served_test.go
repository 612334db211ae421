package acp_test

// This file holds the mappings of other agents' definition files to a
// child's permission mode through the served `subagent` tool, over the
// real ACP connection: a project's definition asking for more than the
// person's settings grant is refused, whatever its format; a Claude Code
// "permissionMode: plan" child cannot write; a Codex
// "sandbox_mode = workspace-write" child runs in accept-edits (writes in
// the cwd unasked, is asked for an outside write). Each test fails when
// its mapping is widened (or narrowed).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/subagent"
)

func writeDefs(t *testing.T, cwd string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(cwd, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolResultsOf returns the decoded tool results of a session's log, by
// call id.
func toolResultsOf(ctx context.Context, t *testing.T, e *wsEnv, id string) map[string]session.ToolResultData {
	t.Helper()
	snap, err := e.app.Persist.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session.ToolResultData{}
	for _, ev := range snap.Events {
		if ev.Type != session.TypeToolResult {
			continue
		}
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range d.Message.Content {
			if b.Type == "tool-result" {
				out[b.ToolCallID] = d
			}
		}
	}
	return out
}

const refusedDefsScript = `
model:
  main:
    - tool_calls:
        - {id: call-ours, name: subagent, arguments: '{"description": "Ours", "prompt": "Go.", "agent": "ours-bypass"}'}
    - tool_calls:
        - {id: call-claude, name: subagent, arguments: '{"description": "Claude", "prompt": "Go.", "agent": "claude-bypass"}'}
    - tool_calls:
        - {id: call-codex, name: subagent, arguments: '{"description": "Codex", "prompt": "Go.", "agent": "codex-full"}'}
    - tool_calls:
        - {id: call-shell, name: subagent, arguments: '{"description": "Shell", "prompt": "Go.", "agent": "claude-shell"}'}
    - tool_calls:
        - {id: call-gemini, name: subagent, arguments: '{"description": "Gemini", "prompt": "Go.", "agent": "gemini-shell"}'}
    - tool_calls:
        - {id: call-copilot, name: subagent, arguments: '{"description": "Copilot", "prompt": "Go.", "agent": "copilot-shell"}'}
    - text: ALL REFUSED
  "*":
    - text: SHOULD NOT RUN
`

// A project's definition asking for bypass (ours, Claude Code's
// bypassPermissions, Codex's danger-full-access) or for a tool the
// person's settings deny (bash, as Claude Code's, Gemini CLI's and
// Copilot's names for it) is refused through the tool the model calls:
// AGENT_REFUSED, and no child is started.
func TestServedSubagentRefusesProjectAgentsBeyondTheSettings(t *testing.T) {
	ctx := ctxFor(t)
	userFile := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(userFile, []byte(`{"permissions": {"deny": ["bash"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd := tempCwd(t)
	writeDefs(t, cwd, map[string]string{
		".acp-agent/agents/ours-bypass.md":      "---\ndescription: Ours, bypass\npermissionMode: bypass\n---\n",
		".claude/agents/claude-bypass.md":       "---\nname: claude-bypass\ndescription: Claude, bypass\npermissionMode: bypassPermissions\n---\n",
		".codex/agents/codex-full.toml":         "name = \"codex-full\"\ndescription = \"Codex, full access\"\nsandbox_mode = \"danger-full-access\"\n",
		".claude/agents/claude-shell.md":        "---\nname: claude-shell\ndescription: Claude, shell\ntools: Read, Bash\n---\n",
		".gemini/agents/gemini-shell.md":        "---\nname: gemini-shell\ndescription: Gemini, shell\ntools: [read_file, run_shell_command]\n---\n",
		".github/agents/copilot-shell.agent.md": "---\ndescription: Copilot, shell\ntools: ['read', 'execute']\n---\n",
	})
	c := newWSClient(false, false)
	e := startWS(t, loadScript(t, refusedDefsScript), c, func(cfg *app.Config, _ workspace.Resolver) { cfg.SettingsFile = userFile })
	id := e.newSession(ctx, cwd)
	if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	results := toolResultsOf(ctx, t, e, id)
	for call, want := range map[string]string{
		"call-ours":    `asks for permission mode "bypass"`,
		"call-claude":  `asks for permission mode "bypass"`,
		"call-codex":   `asks for permission mode "bypass"`,
		"call-shell":   `asks for tool "bash", which the settings deny`,
		"call-gemini":  `asks for tool "bash", which the settings deny`,
		"call-copilot": `asks for tool "bash", which the settings deny`,
	} {
		d, ok := results[call]
		if !ok {
			t.Errorf("%s: no result", call)
			continue
		}
		if d.Error == nil || d.Error.Code != subagent.CodeAgentRefused || !strings.Contains(d.Error.Message, want) {
			t.Errorf("%s: result %+v; want %s containing %q", call, d.Error, subagent.CodeAgentRefused, want)
		}
	}
	entries, err := e.app.Catalog.ListChildren(ctx, id)
	if err != nil || len(entries) != 0 {
		t.Errorf("children = %v, %v; want none started", entries, err)
	}
	if n := len(c.requests()); n != 0 {
		t.Errorf("%d permission requests; want none", n)
	}
}

const claudePlanScript = `
model:
  main:
    - tool_calls:
        - {id: call-plan, name: subagent, arguments: '{"description": "Planner", "prompt": "Write c.txt.", "agent": "planner"}'}
    - text: DONE
    - text: NOTED
  Planner:
    - tool_calls:
        - {id: call-c, name: write, arguments: '{"path": "c.txt", "content": "from the planner\n"}'}
    - text: REFUSED
`

// A Claude Code definition with permissionMode: plan runs its child in
// plan mode under an accept-edits root: its write is refused
// (MODE_FORBIDS, naming the definition), nothing is asked, nothing is
// written. Mapped to default the write would be asked, to acceptEdits
// written, to bypass the delegation refused.
func TestServedClaudePlanAgentCannotWrite(t *testing.T) {
	ctx := ctxFor(t)
	cwd := tempCwd(t)
	writeDefs(t, cwd, map[string]string{
		".claude/agents/planner.md": "---\nname: planner\ndescription: Plans only\npermissionMode: plan\n---\nPlan.\n",
	})
	c := newWSClient(false, false, "allow-once")
	e := startWS(t, loadScript(t, claudePlanScript), c)
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "accept-edits"}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	child := findChild(t, e.env, id)
	awaitSettled(ctx, t, e.env, child)
	d, ok := toolResultsOf(ctx, t, e, child)["call-c"]
	if !ok || d.Error == nil || d.Error.Code != workspace.CodeModeForbids ||
		!strings.Contains(d.Error.Message, "this subagent runs in plan mode (its agent definition asks for it)") {
		t.Errorf("the plan child's write: %+v; want MODE_FORBIDS naming its definition", d.Error)
	}
	if _, err := os.Stat(filepath.Join(cwd, "c.txt")); err == nil {
		t.Error("the plan child wrote c.txt")
	}
	if n := len(c.requests()); n != 0 {
		t.Errorf("%d permission requests; want none (plan refuses)", n)
	}
	if rec := definitionOf(ctx, t, e, child); rec.Format != "claude" || rec.PermissionMode != "plan" {
		t.Errorf("recorded definition %+v; want claude, plan", rec)
	}
}

// definitionOf returns the definition record of a child's log.
func definitionOf(ctx context.Context, t *testing.T, e *wsEnv, child string) subagent.AgentDefinition {
	t.Helper()
	snap, err := e.app.Persist.Inspect(ctx, child)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := subagent.FoldDefinition(snap.Events)
	if err != nil || rec == nil {
		t.Fatalf("definition record: %v, %v", rec, err)
	}
	return *rec
}

const codexWriteScript = `
model:
  main:
    - tool_calls:
        - {id: call-w, name: subagent, arguments: '{"description": "Writer", "prompt": "Write both files.", "agent": "writer"}'}
    - text: DONE
    - text: AGAIN
    - text: NOTED
  Writer:
    - tool_calls:
        - {id: call-in, name: write, arguments: '{"path": "in.txt", "content": "inside\n"}'}
    - tool_calls:
        - {id: call-out, name: write, arguments: '{"path": "OUTSIDE", "content": "outside\n"}'}
    - text: WROTE
`

// A Codex definition with sandbox_mode = "workspace-write" runs its child
// in accept-edits, even under a bypass root: its write inside the cwd
// goes through unasked, its write outside is asked (and refused here). In
// plan or default the first write would be refused or asked; in bypass
// the second would not be asked (and a project file asking for bypass is
// refused outright).
func TestServedCodexWorkspaceWriteAgentRunsInAcceptEdits(t *testing.T) {
	ctx := ctxFor(t)
	cwd := tempCwd(t)
	outside := filepath.Join(t.TempDir(), "out.txt")
	writeDefs(t, cwd, map[string]string{
		".codex/agents/writer.toml": "name = \"writer\"\ndescription = \"Writes\"\nsandbox_mode = \"workspace-write\"\ndeveloper_instructions = \"Write.\"\n",
	})
	script := strings.Replace(codexWriteScript, "OUTSIDE", outside, 1)
	c := newWSClient(false, false, "reject-once")
	e := startWS(t, loadScript(t, script), c)
	id := e.newSession(ctx, cwd)
	if _, err := e.cs.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: acpsdk.SessionId(id), ModeId: "bypass"}); err != nil {
		t.Fatal(err)
	}
	if r, err := e.prompt(ctx, id, "delegate"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %v, %v", r, err)
	}
	promptIfHeld(ctx, t, e.env, id, func() bool { return len(c.requests()) > 0 })
	child := findChild(t, e.env, id)
	awaitSettled(ctx, t, e.env, child)
	if b, err := os.ReadFile(filepath.Join(cwd, "in.txt")); err != nil || string(b) != "inside\n" {
		t.Errorf("the inside write: %q, %v; want it written unasked", b, err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the outside write went through; accept-edits asks for it")
	}
	reqs := c.requests()
	if len(reqs) != 1 || string(reqs[0].ToolCall.ToolCallId) != child+"/call-out" {
		var ids []string
		for _, r := range reqs {
			ids = append(ids, string(r.ToolCall.ToolCallId))
		}
		t.Errorf("permission requests = %v; want only %s/call-out", ids, child)
	}
	if rec := definitionOf(ctx, t, e, child); rec.Format != "codex" || rec.PermissionMode != "accept-edits" {
		t.Errorf("recorded definition %+v; want codex, accept-edits", rec)
	}
}
