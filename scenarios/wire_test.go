package scenarios

import (
	"strings"
	"testing"
)

// TestWireFinishReportsUnterminatedLine: output left without a final
// newline when the agent stops is reported by finish (as the runner calls
// it after the last stop), in either direction; terminated output is not.
func TestWireFinishReportsUnterminatedLine(t *testing.T) {
	tests := []struct {
		name  string
		agent string
		want  string // substring of the one problem, "" for none
	}{
		{"terminated", `{"jsonrpc":"2.0","method":"x"}` + "\n", ""},
		{"unterminated last line", `{"jsonrpc":"2.0","method":"x"}` + "\n" + `{"jsonrpc":"2.0"`, "agent wrote an unterminated line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newWireRecorder()
			r.tap(fromAgent).Write([]byte(tt.agent))
			if _, invalid := r.transcript(); len(invalid) != 0 {
				t.Fatalf("problems before finish: %v", invalid)
			}
			r.finish()
			_, invalid := r.transcript()
			switch {
			case tt.want == "" && len(invalid) != 0:
				t.Errorf("problems %v, want none", invalid)
			case tt.want != "" && (len(invalid) != 1 || !strings.Contains(invalid[0], tt.want)):
				t.Errorf("problems %v, want one with %q", invalid, tt.want)
			}
		})
	}
}
