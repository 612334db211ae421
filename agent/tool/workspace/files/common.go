package files

import (
	"context"
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
	if p.Linked {
		return " (a file with more than one hard link: another of its names may be outside the working directory)"
	}
	if p.OutsideCwd {
		return " (outside the working directory)"
	}
	return ""
}

// askOutside asks the gate about a change to an outside path before the
// file is read: every refusal is the same answer whatever the file holds,
// and the display carries the location only (no diff of outside text is
// shown or logged before the person allowed it). It reports whether it
// asked; an inside path is asked later, with the diff.
func askOutside(ctx context.Context, env workspace.Env, inv tool.Invocation, name, title string, p workspace.Path, d *session.ToolDisplay) (bool, error) {
	if !p.OutsideCwd {
		return false, nil
	}
	// A copy: the caller adds the diff to d once allowed.
	shown := &session.ToolDisplay{Locations: append([]session.ToolLocation(nil), d.Locations...)}
	return true, workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: name, Kind: workspace.KindEdit,
		Title: title, Display: shown, OutsideCwd: true,
		Resolved: workspace.ResolvedSubject(p),
		Subject:  workspace.DisplayPath(env.Cwd, p.Abs), Protected: workspace.ProtectedReason(env.Cwd, p),
	})
}
