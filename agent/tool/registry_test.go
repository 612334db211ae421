package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

type fakeTool struct {
	name   string
	schema string
	fn     func(ctx context.Context, inv tool.Invocation) (tool.Result, error)
}

func (f fakeTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: f.name, Description: f.name + " tool", Parameters: json.RawMessage(f.schema)}
}

func (f fakeTool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	return f.fn(ctx, inv)
}

func ok(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	return tool.TextResult("ok "+string(inv.Arguments), nil), nil
}

type codedErr struct{}

func (codedErr) Error() string { return "no such child" }
func (codedErr) Code() string  { return "NOT_FOUND" }
func (codedErr) Name() string  { return "SubagentError" }

func TestRegistryExecute(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	schema := `{"type":"object","properties":{"n":{"type":"integer","minimum":1},"s":{"type":"string"}},"required":["n"]}`
	tests := []struct {
		name     string
		ctx      context.Context
		tool     fakeTool
		call     string
		args     string
		wantText string
		wantCode string // "" means success
	}{
		{name: "success", tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":2}`, wantText: `ok {"n":2}`},
		{name: "extra keys allowed", tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":2,"zzz":true}`, wantText: `ok {"n":2,"zzz":true}`},
		{name: "no schema, empty args", tool: fakeTool{"t", "", ok}, call: "t", args: ``, wantText: `ok {}`},
		{name: "unknown tool", tool: fakeTool{"t", schema, ok}, call: "x", args: `{}`,
			wantText: `Error: unknown tool "x"`, wantCode: tool.CodeUnknownTool},
		{name: "wrong type", tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":"two"}`,
			wantText: "Error: invalid arguments: at '/n': got string, want integer", wantCode: tool.CodeInvalidArgs},
		{name: "two violations", tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":0,"s":1}`,
			wantText: "Error: invalid arguments: at '/n': minimum: got 0, want 1; at '/s': got number, want string", wantCode: tool.CodeInvalidArgs},
		{name: "missing required", tool: fakeTool{"t", schema, ok}, call: "t", args: `{}`,
			wantText: "Error: invalid arguments: missing property 'n'", wantCode: tool.CodeInvalidArgs},
		{name: "not JSON", tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":`, wantCode: tool.CodeInvalidArgs},
		{name: "not an object without schema", tool: fakeTool{"t", "", ok}, call: "t", args: `[1]`,
			wantText: "Error: invalid arguments: arguments must be a JSON object", wantCode: tool.CodeInvalidArgs},
		{name: "aborted before dispatch", ctx: cancelled, tool: fakeTool{"t", schema, ok}, call: "t", args: `{"n":1}`,
			wantText: "Error: tool call aborted before dispatch", wantCode: tool.CodeAbortedBeforeStart},
		{name: "panic", tool: fakeTool{"t", "", func(context.Context, tool.Invocation) (tool.Result, error) {
			var m map[string]int
			m["x"]++ // nil map write
			return tool.Result{}, nil
		}}, call: "t", args: `{}`, wantCode: tool.CodeToolPanicked},
		{name: "plain error", tool: fakeTool{"t", "", func(context.Context, tool.Invocation) (tool.Result, error) {
			return tool.Result{}, errors.New("disk full")
		}}, call: "t", args: `{}`, wantText: "Error: disk full", wantCode: tool.CodeToolFailed},
		{name: "coded error", tool: fakeTool{"t", "", func(context.Context, tool.Invocation) (tool.Result, error) {
			return tool.Result{}, codedErr{}
		}}, call: "t", args: `{}`, wantText: "Error: no such child", wantCode: "NOT_FOUND"},
		{name: "error result without info", tool: fakeTool{"t", "", func(context.Context, tool.Invocation) (tool.Result, error) {
			return tool.Result{IsError: true, Content: []session.Block{session.Text("bad")}}, nil
		}}, call: "t", args: `{}`, wantText: "bad", wantCode: tool.CodeToolFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tool.NewRegistry(tt.tool)
			if err != nil {
				t.Fatal(err)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			res := r.Execute(ctx, tool.Invocation{CallID: "c", Name: tt.call, Arguments: json.RawMessage(tt.args)})
			text := session.JoinText(res.Content, "")
			if tt.wantText != "" && text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if tt.wantCode == "" {
				if res.IsError {
					t.Errorf("unexpected error result %+v", res)
				}
				return
			}
			if !res.IsError || res.Error == nil || res.Error.Code != tt.wantCode {
				t.Errorf("result = %+v (error %+v), want code %s", res, res.Error, tt.wantCode)
			}
		})
	}
}

func TestRegistryAbortedDuringExecution(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r, err := tool.NewRegistry(fakeTool{"slow", "", func(ctx context.Context, _ tool.Invocation) (tool.Result, error) {
		cancel()
		<-ctx.Done()
		return tool.TextResult("finished anyway", nil), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Execute(ctx, tool.Invocation{Name: "slow"})
	if text := session.JoinText(res.Content, ""); text != "Error: tool call aborted" || res.Error.Code != tool.CodeAborted {
		t.Errorf("result = %q %+v", text, res.Error)
	}
}

func TestRegistryContents(t *testing.T) {
	tb := fakeTool{"b", `{"type":"object"}`, ok}
	ta := fakeTool{"a", "", ok}
	r, err := tool.NewRegistry(tb, ta)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) || !slices.Equal(r.Names(), names) || r.Len() != 2 {
		t.Errorf("specs %v names %v", names, r.Names())
	}
	if _, ok := r.Get("a"); !ok {
		t.Error("Get(a) missing")
	}
	only := r.With(func(n string) bool { return n == "b" })
	if !slices.Equal(only.Names(), []string{"b"}) {
		t.Errorf("With = %v", only.Names())
	}
	if res := only.Execute(t.Context(), tool.Invocation{Name: "a"}); res.Error == nil || res.Error.Code != tool.CodeUnknownTool {
		t.Errorf("restricted registry ran a filtered tool: %+v", res)
	}
	clone := r.Clone()
	if err := clone.Add(fakeTool{"c", "", ok}); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 2 || clone.Len() != 3 {
		t.Errorf("clone not independent: %d %d", r.Len(), clone.Len())
	}

	var nilReg *tool.Registry
	if nilReg.Specs() != nil || nilReg.Len() != 0 {
		t.Error("nil registry not empty")
	}
	if res := nilReg.Execute(t.Context(), tool.Invocation{Name: "a"}); res.Error.Code != tool.CodeUnknownTool {
		t.Errorf("nil registry Execute = %+v", res)
	}
}

func TestRegistryRejectsBadTools(t *testing.T) {
	tests := []struct {
		name  string
		tools []tool.Tool
		want  string
	}{
		{"duplicate", []tool.Tool{fakeTool{"a", "", ok}, fakeTool{"a", "", ok}}, "duplicate"},
		{"empty name", []tool.Tool{fakeTool{"", "", ok}}, "empty name"},
		{"schema not JSON", []tool.Tool{fakeTool{"a", "{", ok}}, "not JSON"},
		{"schema invalid", []tool.Tool{fakeTool{"a", `{"type":"nonsense"}`, ok}}, "does not compile"},
		{"nil tool", []tool.Tool{nil}, "nil tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.NewRegistry(tt.tools...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
