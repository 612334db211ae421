package tool_test

import (
	"context"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// TestRegistryAbortKeepsTheToolsDisplay: cancellation replaces a tool's
// result with the aborted error, but what the tool recorded for editors
// (the child it started, the files it changed) stays with the result.
func TestRegistryAbortKeepsTheToolsDisplay(t *testing.T) {
	meta := map[string]any{"acp-agent/subagent": map[string]any{"childSessionId": "c1"}}
	tests := []struct {
		name string
		disp *session.ToolDisplay
	}{
		{"with display", &session.ToolDisplay{Meta: meta}},
		{"without display", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			r, err := tool.NewRegistry(fakeTool{"slow", "", func(ctx context.Context, _ tool.Invocation) (tool.Result, error) {
				cancel()
				<-ctx.Done()
				res := tool.TextResult("stopped", nil)
				res.Display = tt.disp
				return res, nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			res := r.Execute(ctx, tool.Invocation{Name: "slow"})
			if !res.IsError || res.Error == nil || res.Error.Code != tool.CodeAborted {
				t.Fatalf("result = %+v, want the aborted error", res)
			}
			if res.Display != tt.disp {
				t.Errorf("display = %+v, want %+v", res.Display, tt.disp)
			}
		})
	}
}
