package modeltest

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// GrowingHistory is a conversation as the agent loop records it, cut
// after each model call: request i sends steps[:i+1].
func GrowingHistory() [][]model.Message {
	u := func(s string) model.Message {
		return model.Message{Role: session.RoleUser, Content: []session.Block{session.Text(s)}}
	}
	steps := [][]model.Message{
		{u("fix the test")},
		{
			{Role: session.RoleAssistant, Content: []session.Block{
				{Type: session.BlockReasoning, Text: "read it first", Signature: "sig-1"},
				session.Text("Reading."),
				{Type: session.BlockToolCall, ID: "t1", Name: "read", Arguments: `{"path":"a_test.go"}`},
			}},
			{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "t1", Content: []session.Block{session.Text("package a")}}}},
		},
		{
			{Role: session.RoleAssistant, Content: []session.Block{session.Text("Done.")}},
			u("now run it"),
		},
		{
			{Role: session.RoleAssistant, Content: []session.Block{{Type: session.BlockToolCall, ID: "t2", Name: "bash", Arguments: `{"command":"go test ./..."}`}}},
			{Role: model.RoleTool, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: "t2", Content: []session.Block{session.Text("ok")}}}},
		},
	}
	var out [][]model.Message
	var h []model.Message
	for _, s := range steps {
		h = append(h, s...)
		out = append(out, append([]model.Message(nil), h...))
	}
	return out
}

// PrefixTools are tools as the agent offers them, one with an MCP-style
// schema whose keys come in their own order, several beyond properties
// and required.
var PrefixTools = []model.ToolSpec{
	{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"]}`)},
	{Name: "bash", Description: "Run a command.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}},"required":["command"],"additionalProperties":false}`)},
	{Name: "mcp__demo__echo", Parameters: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema", "type":"object","title":"echo","properties":{"z":{"type":"string"},"a":{"type":"string"}},"additionalProperties":false,"description":"d"}`)},
}
