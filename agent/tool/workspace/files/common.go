package files

import (
	"encoding/json"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Tool names, as models expect them.
const (
	ReadToolName  = "read"
	WriteToolName = "write"
	EditToolName  = "edit"
)

// Tools returns `read`, `write` and `edit` over r.
func Tools(r workspace.Resolver) []tool.Tool {
	return []tool.Tool{NewRead(r), NewWrite(r), NewEdit(r)}
}

// pathArgs is the part of the arguments the locators read.
type pathArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
}

// locations is the Locator of the file tools: the path as given.
func locations(args json.RawMessage) []session.ToolLocation {
	var a pathArgs
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return nil
	}
	return []session.ToolLocation{{Path: a.Path, Line: max(a.Offset, 0)}}
}

func outsideNote(p workspace.Path) string {
	if p.OutsideCwd {
		return " (outside the working directory)"
	}
	return ""
}
