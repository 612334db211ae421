package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Name is the tool's name.
const Name = "todo"

// Statuses and priorities (the ACP plan entry values).
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"

	PriorityHigh   = "high"
	PriorityMedium = "medium"
	PriorityLow    = "low"
)

// MaxItems bounds a list: a plan is for a person to read.
const MaxItems = 100

// Item is one task of the list.
type Item struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// List is the tool's arguments and its result's raw value.
type List struct {
	Todos []Item `json:"todos"`
}

// Tool is the todo tool. The zero value is ready to use.
type Tool struct{}

// New returns the todo tool.
func New() Tool { return Tool{} }

const description = `Write your task list for the current work. Each call replaces the whole list, so always send every item. ` +
	`Use it for multi-step tasks: add the steps as "pending", mark the one you are working on "in_progress" (one at a time), ` +
	`and mark items "completed" as soon as they are done. The user sees the list as your plan.`

var parameters = json.RawMessage(`{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The complete task list, in order.",
      "maxItems": 100,
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1, "description": "What the task is, in a few words."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "priority": {"type": "string", "enum": ["high", "medium", "low"], "description": "Defaults to medium."}
        },
        "required": ["content", "status"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`)

// Spec describes the tool to the model.
func (Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: Name, Description: description, Parameters: parameters}
}

// Kind is "think": the call plans, it touches nothing.
func (Tool) Kind() string { return "think" }

// Title is shown by editors on the call.
func (Tool) Title(args json.RawMessage) string {
	l, err := Parse(args)
	if err != nil {
		return "Update plan"
	}
	return fmt.Sprintf("Update plan (%s)", summary(l))
}

// Execute validates and normalizes the list and returns it as the raw
// value.
func (Tool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	l, err := Parse(inv.Arguments)
	if err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: err.Error()}
	}
	return tool.TextResult("Plan updated: "+summary(l)+".", l), nil
}

// Parse decodes and normalizes a list (trimmed content, default priority
// medium) and checks every value.
func Parse(raw json.RawMessage) (List, error) {
	var l List
	if err := json.Unmarshal(raw, &l); err != nil {
		return List{}, fmt.Errorf("todo list: %v", err)
	}
	if len(l.Todos) > MaxItems {
		return List{}, fmt.Errorf("todo list: %d items, at most %d", len(l.Todos), MaxItems)
	}
	if l.Todos == nil {
		l.Todos = []Item{}
	}
	for i := range l.Todos {
		it := &l.Todos[i]
		it.Content = strings.TrimSpace(it.Content)
		if it.Content == "" {
			return List{}, fmt.Errorf("todo item %d: empty content", i+1)
		}
		switch it.Status {
		case StatusPending, StatusInProgress, StatusCompleted:
		default:
			return List{}, fmt.Errorf("todo item %d: status %q (want pending, in_progress or completed)", i+1, it.Status)
		}
		switch it.Priority {
		case "":
			it.Priority = PriorityMedium
		case PriorityHigh, PriorityMedium, PriorityLow:
		default:
			return List{}, fmt.Errorf("todo item %d: priority %q (want high, medium or low)", i+1, it.Priority)
		}
	}
	return l, nil
}

// FromResult returns the list recorded in a todo call's result, or ok
// false when the result carries none (a failed call).
func FromResult(d session.ToolResultData) (List, bool) {
	if d.Error != nil || d.Raw == nil {
		return List{}, false
	}
	raw, err := json.Marshal(d.Raw)
	if err != nil {
		return List{}, false
	}
	l, err := Parse(raw)
	return l, err == nil
}

func summary(l List) string {
	if len(l.Todos) == 0 {
		return "empty"
	}
	var done, active int
	for _, it := range l.Todos {
		switch it.Status {
		case StatusCompleted:
			done++
		case StatusInProgress:
			active++
		}
	}
	return fmt.Sprintf("%d items, %d completed, %d in progress", len(l.Todos), done, active)
}
