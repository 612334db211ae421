package delegation

import (
	"encoding/json"
	"testing"
)

// The runtime writes a start tool's raw output; the adapter reads it back
// from the log (after a JSON round trip) to link the call to its child.
func TestResultChildReadsWhatTheRuntimeWrites(t *testing.T) {
	tests := []struct {
		name     string
		raw      any
		wantID   string
		wantMode string
		wantOK   bool
	}{
		{"continuable", ContinuableResult("c-1"), "c-1", ModeContinuable, true},
		{"foreground", ForegroundResult("r-1", "done"), "r-1", ModeOneShot, true},
		{"unknown kind", map[string]any{"kind": "other", "runId": "x"}, "", "", false},
		{"missing id", map[string]any{"kind": ResultContinuable}, "", ModeContinuable, false},
		{"not an object", "text", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			var decoded any
			if err := json.Unmarshal(b, &decoded); err != nil {
				t.Fatal(err)
			}
			id, mode, ok := ResultChild(decoded)
			if id != tt.wantID || ok != tt.wantOK || (ok && mode != tt.wantMode) {
				t.Fatalf("ResultChild = %q %q %v, want %q %q %v", id, mode, ok, tt.wantID, tt.wantMode, tt.wantOK)
			}
		})
	}
	if !IsStart(ToolSubagent) || !IsStart(ToolFork) || IsStart(ToolSendMessage) {
		t.Fatal("IsStart must hold for exactly the start tools")
	}
	link := ChildLink("c-1", ModeOneShot, 2)[MetaKey].(map[string]any)
	if link["childSessionId"] != "c-1" || link["mode"] != ModeOneShot || link["depth"] != 2 {
		t.Fatalf("ChildLink = %v", link)
	}
}
