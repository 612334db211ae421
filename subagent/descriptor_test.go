package subagent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

func descEvent(seq int64, payload string) session.Event {
	return session.Event{Type: session.TypeDescriptor, Seq: seq, Time: 1, Data: json.RawMessage(payload)}
}

// §5.5 #104.
func TestDescriptorSnapshotAndFold(t *testing.T) {
	if d, err := subagent.FoldFirst(nil); d != nil || err != nil {
		t.Fatalf("FoldFirst(empty) = %v, %v; want nil, nil", d, err)
	}
	tests := []struct {
		name string
		desc subagent.Descriptor
		want string
	}{
		{"minimal one-shot", subagent.Descriptor{Mode: subagent.ModeOneShot, Provider: "spawn"},
			`{"version":2,"mode":"one-shot","provider":"spawn"}`},
		{"labelled one-shot", subagent.Descriptor{Mode: subagent.ModeOneShot, Provider: "spawn", Label: "look around"},
			`{"version":2,"mode":"one-shot","provider":"spawn","label":"look around"}`},
		{"complete continuable", subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "review",
			AgentProvider: "deepseek", AgentModel: "chat", Persona: "reviewer",
			ToolFilter: &subagent.ToolFilter{Allow: []string{"read"}, Deny: []string{"bash"}}},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"review","agentProvider":"deepseek","agentModel":"chat","persona":"reviewer","toolFilter":{"allow":["read"],"deny":["bash"]}}`},
		{"allow-only filter", subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "x",
			ToolFilter: &subagent.ToolFilter{Allow: []string{"read"}}},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{"allow":["read"]}}`},
		{"deny-only filter", subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "x",
			ToolFilter: &subagent.ToolFilter{Deny: []string{}}},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{"deny":[]}}`},
		{"one-shot with a permission mode", subagent.Descriptor{Mode: subagent.ModeOneShot, Provider: "spawn", Label: "look",
			PermissionMode: "plan", PermissionScope: "project"},
			`{"version":2,"mode":"one-shot","provider":"spawn","label":"look","permissionMode":"plan","permissionScope":"project"}`},
		{"continuable with a permission mode", subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "x",
			PermissionMode: "accept-edits", PermissionScope: "user"},
			`{"version":2,"mode":"continuable","provider":"spawn","label":"x","permissionMode":"accept-edits","permissionScope":"user"}`},
		{"empty continuable label is still written", subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn"},
			`{"version":2,"mode":"continuable","provider":"spawn","label":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.desc.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tt.want {
				t.Fatalf("snapshot\n got %s\nwant %s", raw, tt.want)
			}
			got, err := subagent.FoldFirst([]session.Event{descEvent(0, string(raw)), descEvent(1, `{"version":2,"mode":"one-shot","provider":"later"}`)})
			if err != nil || got == nil {
				t.Fatalf("fold = %v, %v", got, err)
			}
			again, _ := got.Snapshot()
			if string(again) != tt.want {
				t.Fatalf("round trip\n got %s\nwant %s", again, tt.want)
			}
		})
	}
	if d, err := subagent.ParseDescriptor(json.RawMessage(`{"version":3,"provider":"spawn"}`)); d != nil || err != nil {
		t.Fatalf("version 3 = %v, %v; want nil, nil", d, err)
	}
	bad := subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "x",
		ToolFilter: &subagent.ToolFilter{Deny: []string{"ba\xffsh"}}}
	if _, err := bad.Snapshot(); !errors.Is(err, subagent.ErrNotSerializable) || !strings.Contains(err.Error(), "not losslessly JSON-serializable") {
		t.Fatalf("invalid UTF-8 snapshot error = %v", err)
	}
}

// §5.5 #105–126, in the check order of subagent-contract.md §1.4.
func TestParseDescriptorRejectsInOrder(t *testing.T) {
	tests := []struct {
		name, payload, want string
	}{
		{"string payload", `"descriptor"`, "payload must be an object"},
		{"null payload", `null`, "payload must be an object"},
		{"array payload", `[]`, "payload must be an object"},
		{"missing version", `{"mode":"one-shot","provider":"spawn"}`, "version must be a number"},
		{"string version", `{"version":"1","mode":"one-shot","provider":"spawn"}`, "version must be a number"},
		{"missing mode", `{"version":2,"provider":"spawn"}`, `mode must be "one-shot" or "continuable"`},
		{"unknown mode", `{"version":2,"mode":"later","provider":"spawn"}`, `mode must be "one-shot" or "continuable"`},
		{"one-shot persona", `{"version":2,"mode":"one-shot","provider":"spawn","persona":"x"}`, `payload has unknown field "persona"`},
		{"one-shot label 7", `{"version":2,"mode":"one-shot","provider":"spawn","label":7}`, "label must be a string"},
		{"unknown key before label", `{"version":2,"mode":"continuable","provider":"spawn","extra":true}`, `payload has unknown field "extra"`},
		{"missing provider", `{"version":2,"mode":"continuable","label":"x"}`, "provider must be a string"},
		{"missing label", `{"version":2,"mode":"continuable","provider":"spawn"}`, "label must be a string"},
		{"label 7", `{"version":2,"mode":"continuable","provider":"spawn","label":7}`, "label must be a string"},
		{"provider 7", `{"version":2,"mode":"continuable","provider":7,"label":"x"}`, "provider must be a string"},
		{"agentProvider 7", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","agentProvider":7}`, "agentProvider must be a string"},
		{"agentModel array", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","agentModel":[]}`, "agentModel must be a string"},
		{"persona object", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","persona":{}}`, "persona must be a string"},
		{"toolFilter array", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":[]}`, "toolFilter must be an object"},
		{"toolFilter unknown key", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{"except":["bash"]}}`, `toolFilter has unknown field "except"`},
		{"toolFilter empty", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{}}`, "toolFilter must declare allow and/or deny"},
		{"toolFilter allow string", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{"allow":"read"}}`, "toolFilter.allow must be an array of strings"},
		{"toolFilter deny numbers", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","toolFilter":{"deny":[7]}}`, "toolFilter.deny must be an array of strings"},
		// The permission mode (agent definitions), both modes.
		{"unknown permission mode", `{"version":2,"mode":"one-shot","provider":"spawn","permissionMode":"yolo","permissionScope":"user"}`, `permissionMode "yolo" is unknown`},
		{"permission mode without scope", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","permissionMode":"plan"}`, `permissionScope must be "project" or "user"`},
		{"scope without mode", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","permissionScope":"user"}`, `permissionMode "" is unknown`},
		{"permission mode 7", `{"version":2,"mode":"continuable","provider":"spawn","label":"x","permissionMode":7}`, "permissionMode must be a string"},
		// Order checks beyond the reference table.
		{"first unknown key in document order", `{"zeta":1,"version":2,"alpha":1,"mode":"continuable"}`, `payload has unknown field "zeta"`},
		{"unknown key beats provider", `{"version":2,"mode":"one-shot","provider":7,"agentModel":"m"}`, `payload has unknown field "agentModel"`},
		{"null label is present", `{"version":2,"mode":"one-shot","provider":"spawn","label":null}`, "label must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := subagent.FoldFirst([]session.Event{descEvent(0, tt.payload)})
			if err == nil {
				t.Fatalf("parsed %+v; want error containing %q", d, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "persisted subagent descriptor ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q; want it to contain %q", err, tt.want)
			}
			var de *subagent.DescriptorError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DescriptorError", err)
			}
		})
	}
}

func TestParseDescriptorUnknownVersionsAreNoDescriptor(t *testing.T) {
	for _, payload := range []string{
		`{"version":1,"mode":"one-shot","provider":"spawn"}`,
		`{"version":999}`,
		`{"version":1e400,"mode":"nonsense"}`,
		`{"version":-0,"mode":"nonsense"}`,
		`{"version":2.5}`,
	} {
		if d, err := subagent.ParseDescriptor(json.RawMessage(payload)); d != nil || err != nil {
			t.Errorf("%s = %v, %v; want nil, nil", payload, d, err)
		}
	}
	if d, err := subagent.ParseDescriptor(json.RawMessage(`{"version":2.0,"mode":"one-shot","provider":"p"}`)); err != nil || d == nil {
		t.Errorf("version 2.0 = %v, %v; want a descriptor", d, err)
	}
}

func FuzzParseDescriptor(f *testing.F) {
	for _, seed := range []string{
		`{"version":2,"mode":"one-shot","provider":"spawn"}`,
		`{"version":2,"mode":"continuable","provider":"spawn","label":"x","agentProvider":"a","agentModel":"m","persona":"p","toolFilter":{"allow":["read"],"deny":["bash"]}}`,
		`{"version":3}`, `null`, `[]`, `"x"`, `{"version":2,"mode":"continuable","toolFilter":{"allow":[7]}}`,
		`{"version":2,"mode":"one-shot","provider":"spawn","permissionMode":"plan","permissionScope":"project"}`,
		`{"version":2,"version":3}`, `{`, `{"version":2}garbage`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := subagent.ParseDescriptor(data)
		if err != nil {
			if d != nil {
				t.Fatalf("descriptor and error both set")
			}
			if !strings.HasPrefix(err.Error(), "persisted subagent descriptor ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if d == nil {
			return
		}
		// A parsed descriptor snapshots to a payload that parses back to
		// the same descriptor.
		raw, err := d.Snapshot()
		if err != nil {
			return // e.g. invalid UTF-8 replaced by the decoder
		}
		again, err := subagent.ParseDescriptor(raw)
		if err != nil || again == nil {
			t.Fatalf("snapshot %s does not parse back: %v", raw, err)
		}
		raw2, _ := again.Snapshot()
		if string(raw) != string(raw2) {
			t.Fatalf("round trip changed: %s vs %s", raw, raw2)
		}
	})
}
