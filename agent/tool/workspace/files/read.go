package files

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Paging of `read`.
const (
	// DefaultReadLimit is the number of lines read when no limit is given.
	DefaultReadLimit = 2000
	// MaxReadLimit caps the limit argument.
	MaxReadLimit = 10000
	// MaxLineChars cuts a longer line in the output.
	MaxLineChars = 2000
	// MaxReadOutput caps the bytes of one result; a page ends early
	// rather than exceed it.
	MaxReadOutput = 100 << 10
)

const (
	readParameters = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The file to read: absolute, or relative to the working directory."},` +
		`"offset":{"type":"integer","minimum":1,"description":"The 1-based line number to start reading at. Default 1."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"The maximum number of lines to read. Default 2000."}` +
		`},"required":["path"],"additionalProperties":false}`
	readDescription = "Read a text file from the workspace. The result shows each line prefixed by its line number and a tab " +
		"(the prefix is not part of the file). Reads up to 2000 lines from the start by default; for a longer file the " +
		"result ends with a note giving the offset to continue from, so call again with that offset (and optionally a " +
		"limit) to page through it. Lines longer than 2000 characters are cut. Binary files are refused. Prefer reading " +
		"a file before editing it, so that old_string in edit matches the current text exactly."
)

var readDescribed = workspace.Describe(ReadToolName, readDescription, readParameters, workspace.KindRead).Locating(locations)

// Read is the `read` tool.
type Read struct {
	workspace.Located
	r workspace.Resolver
}

// NewRead returns `read` over r.
func NewRead(r workspace.Resolver) *Read { return &Read{readDescribed, r} }

// ReadOutput is the raw output of `read`.
type ReadOutput struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	More      bool   `json:"more"`
}

// Execute reads one page of the file.
func (t *Read) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	offset, limit := max(args.Offset, 1), args.Limit
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	limit = min(limit, MaxReadLimit)
	env, p, err := workspace.Target(ctx, t.r, inv, args.Path)
	if err != nil {
		return tool.Result{}, err
	}
	display := &session.ToolDisplay{Locations: []session.ToolLocation{{Path: p.Abs, Line: offset}}}
	// Every read passes the gate: inside the cwd it allows unless a
	// settings rule says otherwise (read(.env)); outside it asks.
	title := "Read " + workspace.TitlePath(env.Cwd, p)
	if p.OutsideCwd {
		title = "Read " + workspace.EscapeTitle(p.Abs) + outsideNote(p)
	}
	err = workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: ReadToolName, Kind: workspace.KindRead,
		Title: title, Display: display, OutsideCwd: p.OutsideCwd,
		Subject: workspace.DisplayPath(env.Cwd, p.Abs), Resolved: workspace.ResolvedSubject(p),
	})
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	if env.Files == nil {
		return workspace.Failed(&tool.Error{Code: workspace.CodeNoWorkspace, Message: "file access is not available"}, display), nil
	}
	// One line more than asked tells whether the file continues.
	text, err := workspace.ReadFile(ctx, env.Files, p, offset, limit+1)
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	if strings.IndexByte(text, 0) >= 0 {
		return workspace.Failed(&tool.Error{Code: workspace.CodeBinaryFile,
			Message: fmt.Sprintf("%s is a binary file; only text files can be read", p.Abs)}, display), nil
	}
	page := renderPage(text, offset, limit, MaxReadOutput)
	out := ReadOutput{Path: p.Abs, StartLine: offset, EndLine: page.end, More: page.more}
	res := tool.TextResult(page.text, out)
	res.Display = display
	return res, nil
}

// page is one rendered window of a file.
type page struct {
	text string
	// end is the last line shown (offset-1 when none).
	end  int
	more bool
}

// renderPage numbers the lines of a window that starts at line offset,
// shows at most limit of them and at most maxBytes of output, and says
// where to continue when the file goes on (text holds limit+1 lines when
// it does).
func renderPage(text string, offset, limit, maxBytes int) page {
	lines := splitLines(text)
	if len(lines) == 0 {
		if offset > 1 {
			return page{text: fmt.Sprintf("(no lines at offset %d: the file is shorter than that)", offset), end: offset - 1}
		}
		return page{text: "(empty file)", end: 0}
	}
	more := len(lines) > limit
	if more {
		lines = lines[:limit]
	}
	var b strings.Builder
	shown := 0
	for i, line := range lines {
		row := fmt.Sprintf("%6d\t%s\n", offset+i, cutLine(line, MaxLineChars))
		if shown > 0 && b.Len()+len(row) > maxBytes {
			more = true
			break
		}
		b.WriteString(row)
		shown++
	}
	end := offset + shown - 1
	if more {
		fmt.Fprintf(&b, "\n[Showing lines %d-%d. The file continues: call read with offset=%d to read more.]\n", offset, end, end+1)
	}
	return page{text: b.String(), end: end, more: more}
}

// splitLines splits text into lines without their terminators ("\n" or
// "\r\n"); a final terminator does not start an empty line.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// cutLine shortens line to at most n characters, at a rune boundary.
func cutLine(line string, n int) string {
	if len(line) <= n {
		return line
	}
	count := 0
	for i := range line {
		if count == n {
			return line[:i] + fmt.Sprintf(" … [line cut: %d more characters]", utf8.RuneCountInString(line[i:]))
		}
		count++
	}
	return line
}
