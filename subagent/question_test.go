package subagent_test

import (
	"encoding/json"
	"testing"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

// TestQuestionUnit: the unit keeps a child's last refused question; other
// events and undecodable or reason-less records change nothing.
func TestQuestionUnit(t *testing.T) {
	refused := func(title, reason string) session.Event {
		raw, _ := json.Marshal(delegation.QuestionRefused{Title: title, Reason: reason, Message: "m"})
		return session.Event{Type: delegation.TypeQuestionRefused, Data: raw}
	}
	other := session.Event{Type: session.TypeNotice, Data: json.RawMessage(`{"kind":"question-refused","message":"x"}`)}
	bad := session.Event{Type: delegation.TypeQuestionRefused, Data: json.RawMessage(`[1]`)}
	tests := []struct {
		name   string
		events []session.Event
		want   string // JSON of the view
	}{
		{"none", nil, "null"},
		{"other events", []session.Event{other}, "null"},
		{"one refusal", []session.Event{refused("write a", "late")}, `{"state":"refused","title":"write a","reason":"late"}`},
		{"the last wins", []session.Event{refused("write a", "late"), refused("write b", "later")}, `{"state":"refused","title":"write b","reason":"later"}`},
		{"undecodable skipped", []session.Event{refused("write a", "late"), bad}, `{"state":"refused","title":"write a","reason":"late"}`},
		{"no reason skipped", []session.Event{refused("write a", "")}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := subagent.QuestionUnit()
			st := u.Init()
			for _, ev := range tt.events {
				var err error
				if st, err = u.Apply(st, ev); err != nil {
					t.Fatal(err)
				}
			}
			v, err := u.View(st)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(v)
			if string(got) != tt.want {
				t.Errorf("view = %s, want %s", got, tt.want)
			}
		})
	}
	q := subagent.Question{State: subagent.QuestionRefusedState, Reason: "late"}
	if q.String() != "question refused: late" {
		t.Errorf("String() = %q", q.String())
	}
}
