package subagent_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// TestDelegationResultsRecordTheChildLink: every delegation outcome that
// has a child (background start, foreground answer, foreground failure,
// foreground call cancelled mid-run) records the same child link with its
// result (display meta, logged) as its progress reports carried live.
func TestDelegationResultsRecordTheChildLink(t *testing.T) {
	sc := newScript().text("bg", "bg answer").text("answer", "fg answer").
		add("cut", func(context.Context) ([]session.Chunk, error) { return subagenttest.Truncated("half"), nil }).
		add("hang", subagenttest.Hang)
	st, _ := durableStack(t, t.TempDir(), sc.model())
	parent := st.NewParent(t, "parent")
	tests := []struct {
		label      string
		background bool
		cancel     bool // cancel the call once the child reported progress
		mode       subagent.Mode
		isErr      bool
	}{
		{"bg", true, false, subagent.ModeContinuable, false},
		{"answer", false, false, subagent.ModeOneShot, false},
		{"cut", false, false, subagent.ModeOneShot, true},
		{"hang", false, true, subagent.ModeOneShot, true},
	}
	for _, tt := range tests {
		t.Run(tt.label, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			var (
				mu   sync.Mutex
				last map[string]any
			)
			raw, _ := json.Marshal(map[string]any{"description": tt.label, "prompt": "go", "run_in_background": tt.background})
			res := parent.Tools().Execute(ctx, tool.Invocation{CallID: "c-" + tt.label, Name: "subagent", Arguments: raw, Caller: parent,
				Progress: func(p tool.Progress) {
					mu.Lock()
					last = p.Meta
					mu.Unlock()
					if tt.cancel {
						cancel()
					}
				}})
			if res.IsError != tt.isErr {
				t.Fatalf("result = %+v, want error %v", res, tt.isErr)
			}
			if res.Display == nil {
				t.Fatalf("result has no display: %+v", res)
			}
			link, _ := res.Display.Meta[subagent.ProgressMetaKey].(map[string]any)
			if link == nil || link["mode"] != string(tt.mode) || link["depth"] != 1 || link["childSessionId"] == "" {
				t.Errorf("display meta = %+v", res.Display.Meta)
			}
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(last, res.Display.Meta) {
				t.Errorf("result meta %+v differs from the live progress meta %+v", res.Display.Meta, last)
			}
		})
	}
}
