package search

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// MaxGlobResults caps the paths `glob` returns.
const MaxGlobResults = 500

const (
	globParameters = `{"type":"object","properties":{` +
		`"pattern":{"type":"string","description":"The glob pattern, relative to the search directory: * and ? within a name, ** for any number of directories, {a,b} alternatives, [abc] classes. A pattern without a slash matches file names at any depth."},` +
		`"path":{"type":"string","description":"The directory to search: absolute, or relative to the working directory. Default: the working directory."},` +
		`"include_ignored":{"type":"boolean","description":"Also list files that .gitignore files or .git/info/exclude ignore. Default false."}` +
		`},"required":["pattern"],"additionalProperties":false}`
	globDescription = "Find files by name pattern, for example \"**/*.go\", \"src/**/*_test.ts\" or \"*.md\" (a pattern " +
		"without a slash matches file names at any depth). Returns matching file paths, sorted, relative to the working " +
		"directory, at most 500; narrow the pattern or path when the list is cut. Files ignored by .gitignore files and " +
		".git/info/exclude are skipped by default (set include_ignored to list them; a path named explicitly is searched " +
		"even if ignored). Version-control directories such as .git are skipped and symbolic links to directories are " +
		"not followed. Use grep to search file contents."
)

var globDescribed = workspace.Describe(GlobToolName, globDescription, globParameters, workspace.KindSearch).Locating(locations)

// Glob is the `glob` tool.
type Glob struct {
	workspace.Located
	r workspace.Resolver
	// maxVisited cuts the walk (0: MaxVisited; tests set a small one).
	maxVisited int
}

// NewGlob returns `glob` over r.
func NewGlob(r workspace.Resolver) *Glob { return &Glob{Located: globDescribed, r: r} }

// GlobOutput is the raw output of `glob`.
type GlobOutput struct {
	Files     []string `json:"files"`
	Total     int      `json:"total"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Execute lists the matching files.
func (t *Glob) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Pattern        string `json:"pattern"`
		Path           string `json:"path"`
		IncludeIgnored bool   `json:"include_ignored"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	m, err := newMatcher(args.Pattern)
	if err != nil {
		return tool.Result{}, err
	}
	rt, failed, err := resolveRoot(ctx, t.r, inv, GlobToolName, args.Path)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	if !rt.isDir {
		res := workspace.Failed(workspace.InvalidArgs("%s is not a directory", rt.path.Abs), rt.display)
		return res, nil
	}
	var out GlobOutput
	ig := ignoresFor(rt, args.IncludeIgnored)
	maxVisited := visitLimit(t.maxVisited)
	limited, err := walkUpTo(ctx, rt.walkDir, ig, maxVisited, func(path string, d fs.DirEntry) error {
		if !m.match(relTo(rt.walkDir, path)) {
			return nil
		}
		if workspace.ReadDenied(rt.env.Permissions, GlobToolName, workspace.KindSearch, rt.shown(path)) {
			return nil // a settings rule denies reading it: not listed either
		}
		out.Total++
		if len(out.Files) < MaxGlobResults {
			out.Files = append(out.Files, rt.shown(path))
		}
		return nil
	})
	if err != nil {
		return workspace.Failed(err, rt.display), nil
	}
	out.Truncated = out.Total > len(out.Files) || limited
	var b strings.Builder
	if len(out.Files) == 0 {
		fmt.Fprintf(&b, "No files match %q.", args.Pattern)
	} else {
		b.WriteString(strings.Join(out.Files, "\n"))
	}
	if len(out.Files) == 0 {
		b.WriteString(ig.skippedNote())
	}
	if out.Total > len(out.Files) {
		fmt.Fprintf(&b, "\n[%d of %d matching files shown; narrow the pattern or path to see the rest.]", len(out.Files), out.Total)
	}
	if limited {
		b.WriteString(stoppedNote(maxVisited))
	}
	if out.Files == nil {
		out.Files = []string{}
	}
	res := tool.TextResult(b.String(), out)
	res.Display = rt.display
	return res, nil
}

func deref(r *tool.Result) tool.Result {
	if r == nil {
		return tool.Result{}
	}
	return *r
}
