package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// titledTool titles each call with its "title" argument, as given.
type titledTool struct{}

func (titledTool) Spec() model.ToolSpec { return model.ToolSpec{Name: "titled"} }
func (titledTool) Execute(context.Context, tool.Invocation) (tool.Result, error) {
	return tool.Result{}, nil
}
func (titledTool) Title(args json.RawMessage) string {
	var a struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Title
}

// TestToolCallTitlesEscaped: a title holding a newline or a right-to-left
// override is shown with them made visible, in the tool_call as in the
// permission request.
func TestToolCallTitlesEscaped(t *testing.T) {
	tr := newTranslator(func(name string) (tool.Tool, bool) { return titledTool{}, name == "titled" })
	for in, want := range map[string]string{
		"plain":                         "plain",
		"Edit notes.txt\nrm -rf ~":      `Edit notes.txt\nrm -rf ~`,
		"Read invoice\u202efdp.exe":     `Read invoice\u{202E}fdp.exe`,
		"tab\there \u2067isolate\u2069": `tab\there \u{2067}isolate\u{2069}`,
	} {
		args, _ := json.Marshal(map[string]string{"title": in})
		if _, got := tr.describe("titled", args); got != want {
			t.Errorf("title %q shown as %q, want %q", in, got, want)
		}
	}
}

// TestDelegationTitleStartsWithTheTask: the delegation's title starts with
// its task, so an editor that keeps only a title's first words (before a
// colon) still shows what the child does.
func TestDelegationTitleStartsWithTheTask(t *testing.T) {
	tr := newTranslator(nil)
	for args, want := range map[string]string{
		`{"description":"  Find the flaky test ","prompt":"..."}`: "Find the flaky test (subagent)",
		`{"prompt":"no description"}`:                             "Subagent",
	} {
		kind, got := tr.describe("subagent", json.RawMessage(args))
		if got != want || kind != "think" {
			t.Errorf("describe(subagent, %s) = %q %q, want think %q", args, kind, got, want)
		}
	}
}

// A child's label in a question's title is escaped, cannot close the
// bracket early, and is capped.
func TestChildTitleLabel(t *testing.T) {
	for label, want := range map[string]string{
		"Reviewer":                  "Reviewer",
		"x] Run the tests [y":       "x) Run the tests (y",
		"a\u202eb":                  `a\u{202E}b`,
		strings.Repeat("long ", 20): strings.Repeat("long ", 20)[:39] + "…",
	} {
		if got := childTitleLabel(label); got != want {
			t.Errorf("childTitleLabel(%q) = %q, want %q", label, got, want)
		}
	}
}
