package search

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// Limits of `grep`.
const (
	DefaultGrepLimit = 100
	MaxGrepLimit     = 1000
	// MaxMatchChars cuts a longer matching line in the output.
	MaxMatchChars = 300
	// maxScanLine is how much of one line is matched; the rest of a
	// longer line is skipped.
	maxScanLine = 64 << 10
	// sniffBytes is how much of a file's start is checked for a NUL
	// byte, which marks it binary.
	sniffBytes = 8 << 10
)

const (
	grepParameters = `{"type":"object","properties":{` +
		`"pattern":{"type":"string","description":"The regular expression to search for (RE2 syntax, as in Go: no backreferences or lookaround)."},` +
		`"path":{"type":"string","description":"The file or directory to search: absolute, or relative to the working directory. Default: the working directory."},` +
		`"glob":{"type":"string","description":"Only search files whose path (relative to the search directory) matches this glob, for example \"*.go\" or \"src/**/*.ts\"."},` +
		`"case_insensitive":{"type":"boolean","description":"Match without regard to case. Default false."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"The maximum number of matching lines to return. Default 100."},` +
		`"include_ignored":{"type":"boolean","description":"Also search files that .gitignore files or .git/info/exclude ignore. Default false."}` +
		`},"required":["pattern"],"additionalProperties":false}`
	grepDescription = "Search file contents with a regular expression (Go RE2 syntax). Returns matching lines as " +
		"\"path:line:text\", in path order, at most 100 by default (set limit for more, up to 1000); the result says " +
		"when it was cut, so narrow the pattern, path or glob then. Files ignored by .gitignore files and " +
		".git/info/exclude are skipped by default (set include_ignored to search them; a path named explicitly is " +
		"searched even if ignored). Binary files, version-control directories such as .git and symbolic links are " +
		"skipped. Use glob to find files by name."
)

var grepDescribed = workspace.Describe(GrepToolName, grepDescription, grepParameters, workspace.KindSearch).Locating(locations)

// Grep is the `grep` tool.
type Grep struct {
	workspace.Located
	r workspace.Resolver
	// maxVisited cuts the walk (0: MaxVisited; tests set a small one).
	maxVisited int
}

// NewGrep returns `grep` over r.
func NewGrep(r workspace.Resolver) *Grep { return &Grep{Located: grepDescribed, r: r} }

// GrepOutput is the raw output of `grep`.
type GrepOutput struct {
	Matches   int  `json:"matches"`
	Files     int  `json:"files"`
	Truncated bool `json:"truncated,omitempty"`
	// Paths are the files with a match, as shown (a recording snapshots
	// them so its replay finds the same matches).
	Paths []string `json:"paths,omitempty"`
}

// Execute searches the files.
func (t *Grep) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Pattern         string `json:"pattern"`
		Path            string `json:"path"`
		Glob            string `json:"glob"`
		CaseInsensitive bool   `json:"case_insensitive"`
		Limit           int    `json:"limit"`
		IncludeIgnored  bool   `json:"include_ignored"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	expr := args.Pattern
	if args.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return tool.Result{}, workspace.InvalidArgs("the pattern is not a valid regular expression: %v", err)
	}
	var filter *matcher
	if args.Glob != "" {
		m, err := newMatcher(args.Glob)
		if err != nil {
			return tool.Result{}, err
		}
		filter = &m
	}
	limit := args.Limit
	if limit <= 0 {
		limit = DefaultGrepLimit
	}
	limit = min(limit, MaxGrepLimit)
	rt, failed, err := resolveRoot(ctx, t.r, inv, GrepToolName, args.Path)
	if failed != nil || err != nil {
		return deref(failed), err
	}

	g := newGrepRun(re, limit, !rt.path.OutsideCwd)
	g.maxVisited = visitLimit(t.maxVisited)
	var limited bool
	var ig *ignores
	if rt.isDir {
		ig = ignoresFor(rt, args.IncludeIgnored)
		limited, err = g.walk(ctx, rt.walkDir, ig, func(rel string) bool {
			if filter != nil && !filter.match(rel) {
				return false
			}
			// What a settings rule denies reading is not searched.
			return !workspace.ReadDenied(rt.env.Permissions, GrepToolName, workspace.KindSearch, rt.shown(filepath.Join(rt.walkDir, rel)))
		}, rt.shown)
	} else {
		name := workspace.DisplayPath(rt.env.Cwd, rt.path.Abs)
		if workspace.ReadDenied(rt.env.Permissions, GrepToolName, workspace.KindSearch, name) {
			return workspace.Failed(&tool.Error{Code: workspace.CodeRuleDenies,
				Message: fmt.Sprintf("reading %s is denied by a settings rule", name)}, rt.display), nil
		}
		err = g.single(ctx, rt.path.Abs, name)
	}
	if err != nil {
		return workspace.Failed(err, rt.display), nil
	}
	s := g
	out := GrepOutput{Matches: s.matches, Files: s.files, Truncated: s.cut || limited, Paths: s.paths}
	b := &s.out
	if s.matches == 0 {
		fmt.Fprintf(b, "No matches for %q.", args.Pattern)
		b.WriteString(ig.skippedNote())
	}
	if s.cut {
		fmt.Fprintf(b, "\n[Stopped at %d matches; narrow the pattern, path or glob, or raise limit, to see more.]", limit)
	}
	if limited {
		b.WriteString(stoppedNote(g.maxVisited))
	}
	res := tool.TextResult(strings.TrimPrefix(b.String(), "\n"), out)
	res.Display = rt.display
	return res, nil
}

// cutText renders a matching line, cut to n characters at a rune boundary.
func cutText(line []byte, n int) string {
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + " …"
		}
		i++
	}
	return s
}
