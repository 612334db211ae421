package session

import (
	"slices"
	"testing"
)

// logOf builds a contiguous log from (type, payload) pairs.
func logOf(pairs ...any) []Event {
	var out []Event
	for i := 0; i < len(pairs); i += 2 {
		ev := Event{Type: pairs[i].(string), Seq: int64(len(out)), Time: 1000 + int64(len(out)), Data: MustData(pairs[i+1])}
		if SurfaceTypes[ev.Type] {
			ev.SurfaceOp = AppendOp
		}
		out = append(out, ev)
	}
	return out
}

func TestCloseInterruptedTurn(t *testing.T) {
	turn := TurnData{Turn: 1}
	step := StepData{Turn: 1, Step: 1}
	asked := AssistantMessageData{Turn: 1, Step: 1, Message: Message{ID: "m", Role: RoleAssistant, Content: []Block{
		{Type: BlockToolCall, ID: "c1", Name: "t"}, {Type: BlockToolCall, ID: "c2", Name: "t"},
	}}}
	called := ToolCallData{Turn: 1, Step: 1, CallID: "c1", Name: "t", Arguments: "{}"}
	compStart := CompactionStartData{ID: "k1", Trigger: TriggerManual, PreTokens: 900}
	compDone := CompactionData{ID: "k1", Trigger: TriggerManual, Outcome: CompactionCompleted, Summary: "s"}
	tests := []struct {
		name      string
		log       []Event
		wantTypes []string
		wantCodes []string
	}{
		{"closed turn", logOf(TypeTurnStart, turn, TypeTurnEnd, TurnEndData{Turn: 1}), nil, nil},
		{"open turn, no step", logOf(TypeTurnStart, turn), []string{TypeTurnEnd}, nil},
		{"open step", logOf(TypeTurnStart, turn, TypeStepStart, step), []string{TypeStepEnd, TypeTurnEnd}, nil},
		{"one call started, one not", logOf(TypeTurnStart, turn, TypeStepStart, step, TypeAssistantMessage, asked, TypeToolCall, called),
			[]string{TypeToolResult, TypeToolResult, TypeStepEnd, TypeTurnEnd}, []string{CodeToolOutcomeUnknown, CodeToolNotStarted}},
		{"compaction started, not closed", logOf(TypeTurnStart, turn, TypeStepStart, step, TypeCompactionStart, compStart),
			[]string{TypeCompaction, TypeStepEnd, TypeTurnEnd}, nil},
		{"compaction started and closed", logOf(TypeTurnStart, turn, TypeStepStart, step, TypeCompactionStart, compStart, TypeCompaction, compDone),
			[]string{TypeStepEnd, TypeTurnEnd}, nil},
		{"compaction open after a call", logOf(TypeTurnStart, turn, TypeStepStart, step, TypeAssistantMessage, asked, TypeToolCall, called, TypeCompactionStart, compStart),
			[]string{TypeCompaction, TypeToolResult, TypeToolResult, TypeStepEnd, TypeTurnEnd}, []string{CodeToolOutcomeUnknown, CodeToolNotStarted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CloseInterruptedTurn("s1", tt.log)
			if err != nil {
				t.Fatal(err)
			}
			var types, codes []string
			for i, ev := range got {
				types = append(types, ev.Type)
				if ev.Seq != int64(len(tt.log)+i) || ev.Time != tt.log[len(tt.log)-1].Time {
					t.Errorf("closer %d: seq %d time %d", i, ev.Seq, ev.Time)
				}
				if ev.Type == TypeCompaction {
					d, err := DecodeData[CompactionData](ev)
					if err != nil {
						t.Fatal(err)
					}
					if d.ID != compStart.ID || d.Outcome != CompactionFailed || d.Error != TextCompactionInterrupted || d.PostTokens != compStart.PreTokens {
						t.Errorf("closing compaction %+v", d)
					}
				}
				if ev.Type == TypeToolResult {
					d, err := DecodeData[ToolResultData](ev)
					if err != nil {
						t.Fatal(err)
					}
					codes = append(codes, d.Error.Code)
				}
			}
			if !slices.Equal(types, tt.wantTypes) || !slices.Equal(codes, tt.wantCodes) {
				t.Fatalf("closers %v %v, want %v %v", types, codes, tt.wantTypes, tt.wantCodes)
			}
			if err := ValidateLog(append(slices.Clone(tt.log), got...)); err != nil {
				t.Fatalf("repaired log invalid: %v", err)
			}
			again, _ := CloseInterruptedTurn("s1", tt.log)
			for i := range again {
				if string(again[i].Data) != string(got[i].Data) {
					t.Fatalf("repair is not deterministic at %d", i)
				}
			}
		})
	}
}

// A malformed payload inside the open turn is a *FormatError with its seq.
func TestCloseInterruptedTurnMalformed(t *testing.T) {
	log := logOf(TypeTurnStart, TurnData{Turn: 1})
	log = append(log, Event{Type: TypeStepStart, Seq: 1, Time: 1, Data: []byte(`{"turn":"x"}`)})
	_, err := CloseInterruptedTurn("s1", log)
	fe, ok := err.(*FormatError)
	if !ok || fe.Seq != 1 {
		t.Fatalf("err = %v, want *FormatError at seq 1", err)
	}
}

func TestOpenCompactions(t *testing.T) {
	start := func(id string) CompactionStartData { return CompactionStartData{ID: id, Trigger: TriggerAuto} }
	done := func(id string) CompactionData { return CompactionData{ID: id, Outcome: CompactionCompleted} }
	tests := []struct {
		name string
		log  []Event
		want []string
	}{
		{"none", logOf(TypeTurnStart, TurnData{Turn: 1}), nil},
		{"open", logOf(TypeCompactionStart, start("a")), []string{"a"}},
		{"closed", logOf(TypeCompactionStart, start("a"), TypeCompaction, done("a")), nil},
		{"one of two closed", logOf(TypeCompactionStart, start("a"), TypeCompaction, done("a"), TypeCompactionStart, start("b")), []string{"b"}},
		// A stub-only compaction has no start: closing it closes nothing.
		{"closed without start", logOf(TypeCompaction, done("z"), TypeCompactionStart, start("a")), []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenCompactions(tt.log)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range got {
				ids = append(ids, d.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("open = %v, want %v", ids, tt.want)
			}
		})
	}
	bad := append(logOf(TypeTurnStart, TurnData{Turn: 1}), Event{Type: TypeCompactionStart, Seq: 1, Data: []byte(`{"id":7}`)})
	if _, err := OpenCompactions(bad); err == nil {
		t.Fatal("malformed start accepted")
	}
}
