package acp

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/acpschema"
)

// A child's idle state says how its work ended, from its turn's end or its
// settlement: a failed child is idle with stopReason error (and the
// failure), a cancelled one with cancelled; every state matches the
// schema.
func TestChildIdleStateSaysHowItEnded(t *testing.T) {
	tests := []struct {
		name       string
		state      *StateUpdate
		stop, text string
	}{
		{"turn completed", turnEndState(&session.TurnEndReason{Kind: session.TurnEndCompleted}), "end_turn", ""},
		{"turn aborted", turnEndState(&session.TurnEndReason{Kind: session.TurnEndAborted}), "cancelled", ""},
		{"turn failed", turnEndState(&session.TurnEndReason{Kind: session.TurnEndError, Error: &session.ErrorInfo{Message: "boom"}}), "error", "boom"},
		{"turn interrupted", turnEndState(&session.TurnEndReason{Kind: session.TurnEndInterrupted}), "error", "interrupted"},
		{"turn max tokens", turnEndState(&session.TurnEndReason{Kind: session.TurnEndMaxTokens}), "max_tokens", ""},
		{"settled completed", settledState(session.Message{Source: session.Source{Stop: delegation.StopCompleted}}), "end_turn", ""},
		{"settled cancelled", settledState(session.Message{Source: session.Source{Stop: delegation.StopAborted}}), "cancelled", ""},
		{"settled failed", settledState(session.Message{Source: session.Source{Stop: delegation.StopError}, Content: []session.Block{session.Text("subagent failed: the model refused the key")}}), "error", "the model refused the key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			if st.State != StateIdle || st.StopReason != tt.stop {
				t.Fatalf("state = %+v, want idle %s", st, tt.stop)
			}
			if tt.text != "" && (st.Error == nil || !strings.Contains(st.Error.Message, tt.text)) {
				t.Errorf("error = %+v, want it to say %q", st.Error, tt.text)
			}
			acpschema.Check(t, "StateUpdate", st)
		})
	}
}
