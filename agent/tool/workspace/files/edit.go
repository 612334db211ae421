package files

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Codes of a refused edit.
const (
	// CodeEditNoMatch: old_string does not occur in the file.
	CodeEditNoMatch = "EDIT_NO_MATCH"
	// CodeEditAmbiguous: old_string occurs more than once and replace_all
	// is not set.
	CodeEditAmbiguous = "EDIT_AMBIGUOUS"
)

const (
	editParameters = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The file to edit: absolute, or relative to the working directory."},` +
		`"old_string":{"type":"string","description":"The exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is true."},` +
		`"new_string":{"type":"string","description":"The text to put in its place (must differ from old_string)."},` +
		`"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string instead of requiring a unique one. Default false."}` +
		`},"required":["path","old_string","new_string"],"additionalProperties":false}`
	editDescription = "Edit a text file in the workspace by exact string replacement: old_string is replaced by new_string. " +
		"old_string must match the current file exactly (whitespace, indentation and line breaks included; do not " +
		"include the line-number prefixes that read shows) and must occur exactly once, so include enough surrounding " +
		"lines to make it unique; set replace_all to replace every occurrence, for example to rename something. The " +
		"call fails, changing nothing, when old_string is not found or is not unique. The user is asked to approve the " +
		"change and sees it as a diff. To create a file, use write."
)

var editDescribed = workspace.Describe(EditToolName, editDescription, editParameters, workspace.KindEdit).Locating(locations)

// Edit is the `edit` tool.
type Edit struct {
	workspace.Located
	r workspace.Resolver
}

// NewEdit returns `edit` over r.
func NewEdit(r workspace.Resolver) *Edit { return &Edit{editDescribed, r} }

// Execute applies the replacement, asking first with the diff.
func (t *Edit) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	if args.OldString == "" {
		return tool.Result{}, workspace.InvalidArgs("old_string is empty; give the exact text to replace, or use write to create a file")
	}
	if args.OldString == args.NewString {
		return tool.Result{}, workspace.InvalidArgs("old_string and new_string are the same; there is nothing to change")
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
	title := "Edit " + workspace.TitlePath(env.Cwd, p) + outsideNote(p)
	// Decide before touching: an outside path is asked about before it is
	// read, so no answer (no match, ambiguous, the diff) depends on its
	// content until the person allowed it.
	asked, err := askOutside(ctx, env, inv, EditToolName, title, p, display)
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	old, err := workspace.ReadFile(ctx, env.Files, p, 0, 0)
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	if !utf8.ValidString(old) || strings.IndexByte(old, 0) >= 0 {
		return workspace.Failed(&tool.Error{Code: workspace.CodeBinaryFile,
			Message: fmt.Sprintf("%s is not UTF-8 text; it cannot be edited by string replacement", name)}, display), nil
	}
	updated, rep, err := Replace(old, args.OldString, args.NewString, args.ReplaceAll)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			te.Message = name + ": " + te.Message
		}
		return workspace.Failed(err, display), nil
	}
	display.Locations[0].Line = rep.FirstLine
	display.Diffs = []session.ToolDiff{{Path: p.Abs, OldText: &old, NewText: updated}}
	if !asked {
		err = workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
			CallID: inv.CallID, Tool: EditToolName, Kind: workspace.KindEdit,
			Title: title, Display: display, OutsideCwd: p.OutsideCwd,
			Resolved: workspace.ResolvedSubject(p),
			Subject:  name, Protected: workspace.ProtectedReason(env.Cwd, p),
		})
		if err != nil {
			return workspace.Failed(err, display), nil
		}
	}
	if err := workspace.WriteFile(ctx, env.Files, p, updated); err != nil {
		return workspace.Failed(err, display), nil
	}
	msg := fmt.Sprintf("Edited %s: replaced 1 occurrence at line %d.", name, rep.FirstLine)
	if rep.Count > 1 {
		msg = fmt.Sprintf("Edited %s: replaced %d occurrences (the first at line %d).", name, rep.Count, rep.FirstLine)
	}
	res := tool.TextResult(msg, WriteOutput{Path: p.Abs, Replacements: rep.Count})
	res.Display = display
	return res, nil
}

// Replacement describes an applied edit.
type Replacement struct {
	// Count is the number of occurrences replaced.
	Count int
	// FirstLine is the 1-based line where the first replaced occurrence
	// starts.
	FirstLine int
	// CRLF is set when old and new were matched with "\r\n" line breaks
	// because the file uses them and old did not.
	CRLF bool
}

// Replace replaces from by to in content: the single occurrence, or every
// (non-overlapping) occurrence when all is set. It fails with
// CodeEditNoMatch when from does not occur and CodeEditAmbiguous when it
// occurs more than once without all. When from has bare "\n" line breaks
// and does not occur but the file uses "\r\n", the edit is matched and
// applied with "\r\n" line breaks.
func Replace(content, from, to string, all bool) (string, Replacement, error) {
	if from == "" {
		return "", Replacement{}, workspace.InvalidArgs("old_string is empty")
	}
	n := strings.Count(content, from)
	var rep Replacement
	if n == 0 && strings.Contains(from, "\n") && !strings.Contains(from, "\r\n") && strings.Contains(content, "\r\n") {
		crlfOld := strings.ReplaceAll(from, "\n", "\r\n")
		if m := strings.Count(content, crlfOld); m > 0 {
			from, to, n, rep.CRLF = crlfOld, strings.ReplaceAll(strings.ReplaceAll(to, "\r\n", "\n"), "\n", "\r\n"), m, true
		}
	}
	switch {
	case n == 0:
		return "", Replacement{}, &tool.Error{Code: CodeEditNoMatch, Message: "old_string was not found. It must match the " +
			"file exactly, including whitespace, indentation and line breaks; read the file again to see its current text."}
	case n > 1 && !all:
		return "", Replacement{}, &tool.Error{Code: CodeEditAmbiguous, Message: fmt.Sprintf("old_string occurs %d times. "+
			"Include more surrounding text to make it unique, or set replace_all to true to replace every occurrence.", n)}
	}
	first := strings.Index(content, from)
	rep.FirstLine = 1 + strings.Count(content[:first], "\n")
	if all {
		rep.Count = n
		return strings.ReplaceAll(content, from, to), rep, nil
	}
	rep.Count = 1
	return content[:first] + to + content[first+len(from):], rep, nil
}
