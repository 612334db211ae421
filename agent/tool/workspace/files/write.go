package files

import (
	"context"
	"fmt"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

const (
	writeParameters = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The file to write: absolute, or relative to the working directory."},` +
		`"content":{"type":"string","description":"The complete new content of the file."}` +
		`},"required":["path","content"],"additionalProperties":false}`
	writeDescription = "Write a whole file in the workspace, creating it (and its directories) or replacing all of its " +
		"content. The user is asked to approve the change and sees it as a diff. To change part of an existing file, " +
		"prefer edit, which sends only the replaced text; read an existing file before overwriting it."
)

var writeDescribed = workspace.Describe(WriteToolName, writeDescription, writeParameters, workspace.KindEdit).Locating(locations)

// Write is the `write` tool.
type Write struct {
	workspace.Located
	r workspace.Resolver
}

// NewWrite returns `write` over r.
func NewWrite(r workspace.Resolver) *Write { return &Write{writeDescribed, r} }

// WriteOutput is the raw output of `write` and `edit`.
type WriteOutput struct {
	Path    string `json:"path"`
	Created bool   `json:"created,omitempty"`
	// Replacements is the number of replaced occurrences (edit only).
	Replacements int `json:"replacements,omitempty"`
}

// Execute asks to write the file, showing the diff, and writes it.
func (t *Write) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	env, p, err := workspace.Target(ctx, t.r, inv, args.Path)
	if err != nil {
		return tool.Result{}, err
	}
	display := &session.ToolDisplay{Locations: []session.ToolLocation{{Path: p.Abs}}}
	if env.Files == nil {
		return workspace.Failed(&tool.Error{Code: workspace.CodeNoWorkspace, Message: "file access is not available"}, display), nil
	}
	name := workspace.DisplayPath(env.Cwd, p.Abs)
	// Outside: asked before anything is read; the title does not say
	// "Create" or "Write", which would tell whether the file exists.
	asked, err := askOutside(ctx, env, inv, WriteToolName, "Write "+workspace.TitlePath(env.Cwd, p)+outsideNote(p), p, display)
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	var old *string
	text, err := workspace.ReadFile(ctx, env.Files, p, 0, 0)
	switch {
	case err == nil:
		old = &text
	case workspace.IsNotExist(err):
	default:
		return workspace.Failed(fmt.Errorf("cannot replace %s: %w", p.Abs, err), display), nil
	}
	if old != nil && *old == args.Content {
		res := tool.TextResult(fmt.Sprintf("%s already has this content; nothing was written.", name), WriteOutput{Path: p.Abs})
		res.Display = display
		return res, nil
	}
	display.Diffs = []session.ToolDiff{{Path: p.Abs, OldText: old, NewText: args.Content}}
	verb := "Write "
	if old == nil {
		verb = "Create "
	}
	if !asked {
		err = workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
			CallID: inv.CallID, Tool: WriteToolName, Kind: workspace.KindEdit,
			Title: verb + workspace.TitlePath(env.Cwd, p) + outsideNote(p), Display: display, OutsideCwd: p.OutsideCwd,
			Resolved: workspace.ResolvedSubject(p),
			Subject:  name, Protected: workspace.ProtectedReason(env.Cwd, p),
		})
		if err != nil {
			return workspace.Failed(err, display), nil
		}
	}
	if err := workspace.WriteFile(ctx, env.Files, p, args.Content); err != nil {
		return workspace.Failed(err, display), nil
	}
	msg := fmt.Sprintf("Wrote %s (%d lines).", name, len(splitLines(args.Content)))
	if old == nil {
		msg = fmt.Sprintf("Created %s (%d lines).", name, len(splitLines(args.Content)))
	}
	res := tool.TextResult(msg, WriteOutput{Path: p.Abs, Created: old == nil})
	res.Display = display
	return res, nil
}
