package subagent_test

import (
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/tool"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile ids in send_message and interrupt_agent are clean tool errors
// (or accepted no-ops) and never reach the file system outside the data
// directory.
func TestControlToolsRejectHostileIDsCleanly(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	st, _ := durableStack(t, dataDir, newScript().text("child", "ok").model())
	parent := st.NewParent(t, "parent")
	outside := filepath.Join(dir, "outside")
	if err := os.WriteFile(outside+".jsonl", []byte("not a session\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := []struct{ name, id string }{
		{"empty", ""},
		{"dot dot", "../x"},
		{"escape to sibling", "../../outside"},
		{"absolute", outside},
		{"separator", "a/b"},
		{"backslash", `a\b`},
		{"nul", "a\x00b"},
		{"dot", "."},
		{"10KB", strings.Repeat("x", 10<<10)},
		{"self", "parent"},
	}
	for _, tt := range ids {
		t.Run("send_message/"+tt.name, func(t *testing.T) {
			res := call(t, parent, "send_message", map[string]string{"subagent_id": tt.id, "message": "hi"})
			if !res.IsError || !strings.HasPrefix(toolText(res), "Error: ") {
				t.Fatalf("result = %+v", res)
			}
			if res.Error == nil || res.Error.Name != "SubagentError" {
				t.Errorf("error info = %+v", res.Error)
			}
			if len(toolText(res)) > 12<<10+200 {
				t.Errorf("error text is %d bytes", len(toolText(res)))
			}
		})
		t.Run("interrupt_agent/"+tt.name, func(t *testing.T) {
			res := call(t, parent, "interrupt_agent", map[string]string{"agent_id": tt.id})
			if tt.id == "parent" {
				if !res.IsError || !strings.Contains(toolText(res), "cannot interrupt itself") {
					t.Fatalf("result = %+v", res)
				}
				return
			}
			if res.IsError {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	malformed := []struct{ name, tool, args string }{
		{"send_message number id", "send_message", `{"subagent_id":1,"message":"x"}`},
		{"send_message missing", "send_message", `{}`},
		{"send_message not json", "send_message", `{"subagent_id":`},
		{"send_message array", "send_message", `[]`},
		{"interrupt null", "interrupt_agent", `null`},
		{"interrupt number", "interrupt_agent", `{"agent_id":7}`},
		{"subagent bad bool", "subagent", `{"description":"d","prompt":"p","run_in_background":"yes"}`},
		{"subagent_fork missing prompt", "subagent_fork", `{"description":"d"}`},
	}
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			res := parent.Tools().Execute(testCtx(t), toolInv(parent, tt.tool, tt.args))
			if !res.IsError || !strings.Contains(toolText(res), "invalid arguments") {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	data, err := os.ReadFile(outside + ".jsonl")
	if err != nil || string(data) != "not a session\n" {
		t.Errorf("outside file touched: %q %v", data, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("unexpected files next to the data dir: %v", entries)
	}
}

func toolInv(a *agent.Agent, name, args string) tool.Invocation {
	return tool.Invocation{CallID: "t", Name: name, Arguments: []byte(args), Caller: a}
}
