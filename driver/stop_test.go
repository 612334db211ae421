package driver_test

import (
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/driver"
)

func TestEpochStopReasonFoldsConsumedWork(t *testing.T) {
	ev := func(typ string, data any) session.Event {
		return session.Event{Type: typ, Data: session.MustData(data)}
	}
	one, zero := 1, 0
	start := ev(session.TypeTurnStart, session.TurnData{Turn: 1})
	step := ev(session.TypeStepStart, session.StepData{Turn: 1, Step: 1})
	claim := ev(session.TypeInboxSpliced, session.InboxSplicedData{Target: "next-turn", RemovedCount: &one, Inserted: []session.Message{}})
	cancel := ev(session.TypeInboxSpliced, session.InboxSplicedData{Target: "next-turn", RemovedCount: &one, Inserted: []session.Message{}, Outcome: "canceled"})
	_ = zero
	end := func(kind string) session.Event {
		return ev(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: kind}})
	}
	tests := []struct {
		name   string
		events []session.Event
		want   string
	}{
		{"no turn", nil, "completed"},
		{"completed", []session.Event{start, claim, step, end("completed")}, "completed"},
		{"max tokens", []session.Event{start, claim, step, end("max-tokens")}, "max-tokens"},
		{"blocked", []session.Event{start, claim, step, end("blocked")}, "refusal"},
		{"interrupted", []session.Event{start, claim, end("interrupted")}, "aborted"},
		{"aborted before a step", []session.Event{start, claim, end("aborted")}, "aborted"},
		{"error", []session.Event{start, claim, step, end("error")}, "error"},
		{"work dropped after completion", []session.Event{start, claim, step, end("completed"), cancel}, "aborted"},
		{"dropped with no turn", []session.Event{cancel}, "aborted"},
		{"unknown kind", []session.Event{start, step, end("no-such-kind")}, "error"},
		{"turn limit", []session.Event{start, step, end("max-steps")}, "max-turns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := driver.EpochStopReason(tt.events); got != tt.want {
				t.Errorf("EpochStopReason = %s, want %s", got, tt.want)
			}
		})
	}
}
