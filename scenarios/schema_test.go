package scenarios_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/acp-agent/acp-agent/internal/acpschema"
)

// subagentKinds are the ACP v1 subagent-session updates.
var subagentKinds = map[string]bool{"subagent_update": true, "session_message": true, "session_message_chunk": true}

// sdkModule is the module whose schema the agent's updates must match: the
// version go.mod selects.
const sdkModule = "github.com/coder/acp-go-sdk"

// compactionUpdate is the compaction_update variant of SessionUpdate as
// ACP's stabilized Session Compaction RFD defines it (spec acp.md §7.2):
// the SDK's schema predates it. The summary is a list of the SDK's own
// ContentBlock.
var compactionUpdate = map[string]any{
	"type":     "object",
	"required": []any{"sessionUpdate", "compactionId", "status"},
	"properties": map[string]any{
		"sessionUpdate": map[string]any{"const": "compaction_update"},
		"compactionId":  map[string]any{"type": "string", "minLength": 1},
		"status":        map[string]any{"enum": []any{"in_progress", "completed", "failed", "cancelled"}},
		"summary":       map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/ContentBlock"}},
		"error":         map[string]any{"type": "string"},
		"_meta":         map[string]any{"type": "object"},
	},
	"additionalProperties": false,
}

// sessionNotificationSchema compiles SessionNotification from the SDK's
// schema (the unstable one: usage_update is unstable in this version),
// with compaction_update added to SessionUpdate.
func sessionNotificationSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", sdkModule).Output()
	if err != nil {
		t.Fatalf("locate %s: %v", sdkModule, err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "schema", "schema.unstable.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defs := doc.(map[string]any)["$defs"].(map[string]any)
	su := defs["SessionUpdate"].(map[string]any)
	su["oneOf"] = append(su["oneOf"].([]any), compactionUpdate)
	c := jsonschema.NewCompiler()
	if err := c.AddResource("acp.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("acp.json#/$defs/SessionNotification")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestSessionUpdatesMatchTheACPSchema: every session/update the agent sends
// in every scenario (live and replayed) validates against the ACP schema
// of the SDK's version, so each shape we send (message and thought chunks,
// tool calls and updates with diffs, plans, modes, config options, titles,
// usage, compaction) is one a client's SDK decodes.
func TestSessionUpdatesMatchTheACPSchema(t *testing.T) {
	sch := sessionNotificationSchema(t)
	goldens, err := filepath.Glob(filepath.Join("..", "snapshots", "*", "wire.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no wire goldens: %v", err)
	}
	seen := map[string]int{}
	for _, g := range goldens {
		f, err := os.Open(g)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for line := 1; sc.Scan(); line++ {
			var rec struct {
				Agent *struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				} `json:"agent"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Agent == nil || rec.Agent.Method != "session/update" {
				continue
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Agent.Params))
			if err != nil {
				t.Fatalf("%s:%d: %v", g, line, err)
			}
			var kind struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
				} `json:"update"`
			}
			_ = json.Unmarshal(rec.Agent.Params, &kind)
			seen[kind.Update.SessionUpdate]++
			if subagentKinds[kind.Update.SessionUpdate] {
				// Newer than the SDK's schema: the ACP v1 schema of the TS
				// SDK 2.4.0 (internal/acpschema) has them.
				if err := acpschema.Validate("SessionNotification", rec.Agent.Params); err != nil {
					t.Errorf("%s:%d: %v", g, line, err)
				}
				continue
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s:%d: %s does not match the schema: %v", g, line, kind.Update.SessionUpdate, err)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"agent_message_chunk", "user_message_chunk", "tool_call", "tool_call_update",
		"plan", "available_commands_update", "current_mode_update", "session_info_update", "usage_update", "compaction_update", "config_option_update",
		"subagent_update", "session_message", "session_message_chunk"} {
		if seen[want] == 0 {
			t.Errorf("no %s in the scenarios: the schema test does not cover it", want)
		}
	}
	t.Logf("validated %v", seen)
}
