package subagent

// This file applies a delegation's tool filter to a child's tools
// (subagent-contract.md §2.2 step 4, §5.6 #143).

import (
	"slices"

	"github.com/acp-agent/acp-agent/agent/tool"
)

// ChildTools returns tools without the ones f excludes (nil f: tools as
// they are). Every name f lists must be a global tool: one of tools, or
// one global reports (the host's whole tool set, which a child's depth may
// have narrowed; nil: tools only). A filter naming anything else is a
// malformed request, INVALID_REQUEST "unknown global tool", so that a typo
// cannot silently leave a tool the delegator meant to deny.
func ChildTools(tools []tool.Tool, f *ToolFilter, global func(name string) bool) ([]tool.Tool, error) {
	if f == nil {
		return tools, nil
	}
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Spec().Name] = true
	}
	for _, list := range [][]string{f.Allow, f.Deny} {
		for _, n := range list {
			if !names[n] && (global == nil || !global(n)) {
				return nil, Errorf(CodeInvalidRequest, "subagent tool filter names unknown global tool %q", n)
			}
		}
	}
	return slices.DeleteFunc(slices.Clone(tools), func(t tool.Tool) bool {
		name := t.Spec().Name
		if f.Allow != nil && !slices.Contains(f.Allow, name) {
			return true
		}
		return slices.Contains(f.Deny, name)
	}), nil
}
