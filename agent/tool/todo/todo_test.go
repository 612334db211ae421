package todo_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/todo"
)

func TestExecute(t *testing.T) {
	reg, err := tool.NewRegistry(todo.New())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		wantErr    string
		wantText   string
		wantRaw    string
	}{
		{"full", `{"todos":[{"content":" read code ","status":"completed","priority":"high"},{"content":"fix","status":"in_progress"}]}`, "",
			"Plan updated: 2 items, 1 completed, 1 in progress.",
			`{"todos":[{"content":"read code","status":"completed","priority":"high"},{"content":"fix","status":"in_progress","priority":"medium"}]}`},
		{"empty", `{"todos":[]}`, "", "Plan updated: empty.", `{"todos":[]}`},
		{"bad status", `{"todos":[{"content":"x","status":"done"}]}`, "INVALID_ARGS", "", ""},
		{"blank content", `{"todos":[{"content":"  ","status":"pending"}]}`, "INVALID_ARGS", "", ""},
		{"missing todos", `{}`, "INVALID_ARGS", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := reg.Execute(context.Background(), tool.Invocation{CallID: "c", Name: todo.Name, Arguments: json.RawMessage(tt.args)})
			if tt.wantErr != "" {
				if !res.IsError || res.Error.Code != tt.wantErr {
					t.Fatalf("result = %+v, want error %s", res, tt.wantErr)
				}
				return
			}
			if res.IsError {
				t.Fatalf("unexpected error %+v", res)
			}
			if got := session.JoinText(res.Content, ""); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			raw, _ := json.Marshal(res.Raw)
			if string(raw) != tt.wantRaw {
				t.Errorf("raw = %s, want %s", raw, tt.wantRaw)
			}
			// The recorded raw value round-trips through the log.
			var back any
			_ = json.Unmarshal(raw, &back)
			l, ok := todo.FromResult(session.ToolResultData{Raw: back})
			if !ok || len(l.Todos) != strings.Count(tt.wantRaw, "content") {
				t.Errorf("FromResult = %+v, %v", l, ok)
			}
		})
	}
}
