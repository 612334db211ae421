package acp_test

import (
	"encoding/json"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/internal/acpschema"
)

// Every subagent shape we can build matches the ACP v1 schema, alone and
// as the session/update it is sent in; a round trip keeps it.
func TestSubagentShapes_MatchTheSchema(t *testing.T) {
	total := int64(30)
	usage := &acp.Usage{TotalTokens: total, InputTokens: 20, OutputTokens: 10}
	states := map[string]*acp.StateUpdate{
		"running":         acp.Running(),
		"requires_action": acp.RequiresAction(),
		"unknown":         acp.Unknown(),
		"idle":            acp.Idle("", nil),
		"idle end_turn":   acp.Idle(string(acpsdk.StopReasonEndTurn), usage),
		"idle cancelled":  acp.Idle(string(acpsdk.StopReasonCancelled), nil),
		"idle error":      acp.IdleError(-32603, "the model call failed"),
		"idle custom":     acp.Idle("_acp-agent/settled", nil),
	}
	for name, st := range states {
		t.Run("state "+name, func(t *testing.T) {
			acpschema.Check(t, "StateUpdate", st)
			upd := acp.SubagentUpdate{SessionID: "child", State: st}
			checkUpdate(t, "parent", upd)
		})
	}
	t.Run("announcement", func(t *testing.T) {
		upd := acp.SubagentUpdate{
			SessionID: "child", Title: "tests", Description: "Run the tests and report",
			Capabilities: &acp.SubagentSessionCapabilities{Cancel: &struct{}{}},
			State:        acp.Running(), Cwd: "/tmp/wt/child",
			Meta: map[string]any{"acp-agent/subagent": map[string]any{"toolCallId": "call_1"}},
		}
		acpschema.Check(t, "SubagentUpdate", upd)
		acpschema.Check(t, "SubagentSessionCapabilities", upd.Capabilities)
		checkUpdate(t, "parent", upd)
	})
	t.Run("message and chunk", func(t *testing.T) {
		msg := acp.SessionMessage{MessageID: "m1", SenderSessionID: "parent", RecipientSessionID: "child",
			SenderMessageID: "call_1", Content: []acpsdk.ContentBlock{acpsdk.TextBlock("Run the tests")}}
		acpschema.Check(t, "SessionMessage", msg)
		checkUpdate(t, "child", msg)
		chunk := acp.SessionMessageChunk{MessageID: "m1", Content: acpsdk.TextBlock("Run the tests")}
		acpschema.Check(t, "SessionMessageChunk", chunk)
		checkUpdate(t, "child", chunk)
	})
}

// checkUpdate validates v's session/update payload inside the
// notification, and that it decodes back to the same payload.
func checkUpdate(t *testing.T, session string, v interface {
	Update() (map[string]any, error)
}) {
	t.Helper()
	u, err := v.Update()
	if err != nil {
		t.Fatal(err)
	}
	acpschema.Check(t, "SessionNotification", map[string]any{"sessionId": session, "update": u})
	b, _ := json.Marshal(v)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for k, want := range back {
		got, _ := json.Marshal(u[k])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("%s: %s, want %s", k, got, w)
		}
	}
}

// A capability object says cancel is permitted only when it carries one.
func TestSubagentSessionCapabilities_CanCancel(t *testing.T) {
	var none *acp.SubagentSessionCapabilities
	if none.CanCancel() || (&acp.SubagentSessionCapabilities{}).CanCancel() {
		t.Error("no cancel capability reported as cancellable")
	}
	if !(&acp.SubagentSessionCapabilities{Cancel: &struct{}{}}).CanCancel() {
		t.Error("cancel: {} not reported as cancellable")
	}
	b, _ := json.Marshal(acp.SubagentSessionCapabilities{Cancel: &struct{}{}})
	if string(b) != `{"cancel":{}}` {
		t.Errorf("marshalled %s", b)
	}
}
