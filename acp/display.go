package acp

// This file renders a tool call's editor-facing presentation
// (session.ToolDisplay: diffs, an embedded terminal, locations, _meta) as
// ACP tool-call content. The translator uses it for tool_call starts,
// progress and results, live and on replay alike; the permission gate uses
// it for the tool call a session/request_permission refers to.

import (
	"encoding/json"
	"maps"
	"path/filepath"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// displayContent renders the diffs and the terminal of d as ACP content,
// in that order. It returns nil for a nil or empty display.
func displayContent(d *session.ToolDisplay) []acpsdk.ToolCallContent {
	if d == nil {
		return nil
	}
	var out []acpsdk.ToolCallContent
	if d.Text != "" {
		out = append(out, textContent(d.Text)...)
	}
	for _, df := range d.Diffs {
		out = append(out, acpsdk.ToolCallContent{Diff: &acpsdk.ToolCallContentDiff{
			Type:    "diff",
			Path:    df.Path,
			OldText: df.OldText,
			NewText: df.NewText,
		}})
	}
	if d.TerminalID != "" {
		out = append(out, acpsdk.ToolTerminalRef(d.TerminalID))
	}
	return out
}

// acpLocations renders locations, resolving relative paths against cwd
// (ACP locations are absolute). Empty paths are dropped.
func acpLocations(locs []session.ToolLocation, cwd string) []acpsdk.ToolCallLocation {
	var out []acpsdk.ToolCallLocation
	for _, l := range locs {
		if l.Path == "" {
			continue
		}
		p := l.Path
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		loc := acpsdk.ToolCallLocation{Path: p}
		if l.Line > 0 {
			loc.Line = acpsdk.Ptr(l.Line)
		}
		out = append(out, loc)
	}
	return out
}

// mergeMeta returns the union of the given _meta maps (later keys win), or
// nil when all are empty. The inputs are not modified.
func mergeMeta(ms ...map[string]any) map[string]any {
	var out map[string]any
	for _, m := range ms {
		if len(m) == 0 {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(m))
		}
		maps.Copy(out, m)
	}
	return out
}

// applyDisplay adds d to a tool_call_update: its diffs and terminal go
// before the update's existing content, its locations replace the
// update's, and its Meta joins the update's _meta.
func (t *translator) applyDisplay(u *acpsdk.SessionUpdate, d *session.ToolDisplay) {
	if d == nil || u.ToolCallUpdate == nil {
		return
	}
	tu := u.ToolCallUpdate
	if c := displayContent(d); len(c) > 0 {
		tu.Content = append(c, tu.Content...)
	}
	if locs := acpLocations(d.Locations, t.cwd); len(locs) > 0 {
		tu.Locations = locs
	}
	tu.Meta = mergeMeta(tu.Meta, d.Meta)
}

// startLocations returns the locations of a call at its start, from the
// tool's optional tool.Locator.
func (t *translator) startLocations(name string, args json.RawMessage) []acpsdk.ToolCallLocation {
	if t.tools == nil {
		return nil
	}
	tl, ok := t.tools(name)
	if !ok {
		return nil
	}
	lc, ok := tl.(tool.Locator)
	if !ok {
		return nil
	}
	return acpLocations(lc.Locations(args), t.cwd)
}

// locatedTitle titles a call of a tool without a Titler by its name and
// the first file it touches ("edit src/main.go"), when it is a
// tool.Locator.
func locatedTitle(tl tool.Tool, name string, args json.RawMessage) string {
	lc, ok := tl.(tool.Locator)
	if !ok {
		return name
	}
	locs := lc.Locations(args)
	if len(locs) == 0 || locs[0].Path == "" {
		return name
	}
	return name + " " + locs[0].Path
}
