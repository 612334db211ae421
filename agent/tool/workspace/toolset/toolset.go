package toolset

import (
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/files"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/search"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/shell"
)

// Names are the workspace tool names, in the order Tools returns them.
var Names = []string{
	files.ReadToolName, files.WriteToolName, files.EditToolName,
	search.GlobToolName, search.GrepToolName, shell.ToolName,
}

// Tools returns the workspace tools over r. Every call resolves its
// session's workspace through r (by inv.Caller.SessionID()).
func Tools(r workspace.Resolver) []tool.Tool {
	out := files.Tools(r)
	out = append(out, search.Tools(r)...)
	return append(out, shell.Tools(r)...)
}

// ReadOnly reports whether the named workspace tool only reads (its kind
// is read or search): what a read-only mode such as plan mode may allow.
func ReadOnly(name string) bool {
	switch name {
	case files.ReadToolName, search.GlobToolName, search.GrepToolName:
		return true
	}
	return false
}
