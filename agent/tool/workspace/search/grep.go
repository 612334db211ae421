package search

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
	sniffBytes  = 8000
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
}

// NewGrep returns `grep` over r.
func NewGrep(r workspace.Resolver) *Grep { return &Grep{grepDescribed, r} }

// GrepOutput is the raw output of `grep`.
type GrepOutput struct {
	Matches   int  `json:"matches"`
	Files     int  `json:"files"`
	Truncated bool `json:"truncated,omitempty"`
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

	s := &scan{re: re, limit: limit, reader: bufio.NewReaderSize(nil, 64<<10), skipLinked: !rt.path.OutsideCwd}
	if prefix, _ := re.LiteralPrefix(); prefix != "" {
		s.prefix = []byte(prefix)
	}
	var limited bool
	var ig *ignores
	if rt.isDir {
		ig = ignoresFor(rt, args.IncludeIgnored)
		limited, err = walk(ctx, rt.walkDir, ig, func(path string, d fs.DirEntry) error {
			if !d.Type().IsRegular() {
				return nil // symlinks may lead anywhere; devices and FIFOs block
			}
			if filter != nil && !filter.match(relTo(rt.walkDir, path)) {
				return nil
			}
			return s.file(ctx, path, rt.shown(path))
		})
		if errors.Is(err, errStop) {
			err = nil
		}
	} else {
		err = s.file(ctx, rt.path.Abs, workspace.DisplayPath(rt.env.Cwd, rt.path.Abs))
	}
	if err != nil && !errors.Is(err, errStop) {
		return workspace.Failed(err, rt.display), nil
	}
	out := GrepOutput{Matches: s.matches, Files: s.files, Truncated: s.cut || limited}
	b := &s.out
	if s.matches == 0 {
		fmt.Fprintf(b, "No matches for %q.", args.Pattern)
		b.WriteString(ig.skippedNote())
	}
	if s.cut {
		fmt.Fprintf(b, "\n[Stopped at %d matches; narrow the pattern, path or glob, or raise limit, to see more.]", limit)
	}
	if limited {
		fmt.Fprintf(b, "\n[The search stopped after %d entries; search a narrower path.]", MaxVisited)
	}
	res := tool.TextResult(strings.TrimPrefix(b.String(), "\n"), out)
	res.Display = rt.display
	return res, nil
}

// scan accumulates the matches of one grep call.
type scan struct {
	// skipLinked skips files with more than one hard link (they count as
	// outside the cwd; a search inside it never asked about them).
	skipLinked bool
	re         *regexp.Regexp
	limit      int
	out        strings.Builder
	matches    int
	files      int
	cut        bool
	// reader and line are reused from file to file.
	reader *bufio.Reader
	line   []byte
	// prefix, when set, is a literal every match starts with: lines
	// without it are skipped before the regexp runs.
	prefix []byte
}

// file searches one regular file; it returns errStop once the limit is
// reached. Unreadable and binary files are skipped.
func (s *scan) file(ctx context.Context, path, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || (s.skipLinked && workspace.MultiplyLinked(info)) {
		return nil
	}
	r := s.reader
	r.Reset(f)
	defer r.Reset(nil)
	if head, _ := r.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	counted := false
	line := s.line
	defer func() { s.line = line[:0] }()
	for n := 1; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, err = readLine(r, line[:0])
		if len(line) > 0 || err == nil {
			if (s.prefix == nil || bytes.Contains(line, s.prefix)) && s.re.Match(line) {
				if s.matches == s.limit {
					s.cut = true
					return errStop
				}
				s.matches++
				if !counted {
					s.files++
					counted = true
				}
				fmt.Fprintf(&s.out, "%s:%d:%s\n", name, n, cutText(line, MaxMatchChars))
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return nil // a read error ends this file only
		}
	}
}

// readLine reads one line without its terminator into buf, keeping at
// most maxScanLine bytes of it and discarding the rest.
func readLine(r *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if room := maxScanLine - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		return buf, err
	}
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
