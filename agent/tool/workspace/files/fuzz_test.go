package files

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/tool"
)

// FuzzReplace checks the edit rules on arbitrary text: a failure changes
// nothing and is classified by the occurrence count; a success replaces
// exactly the counted occurrences.
func FuzzReplace(f *testing.F) {
	f.Add("a\nfoo\nb\n", "foo", "bar", false)
	f.Add("foo foo", "foo", "x", true)
	f.Add("aaa", "aa", "b", true)
	f.Add("a\r\nb\r\n", "a\nb", "c\nd", false)
	f.Add("", "x", "", false)
	f.Fuzz(func(t *testing.T, content, old, repl string, all bool) {
		got, rep, err := Replace(content, old, repl, all)
		if old == "" {
			if err == nil {
				t.Fatal("empty old_string accepted")
			}
			return
		}
		var te *tool.Error
		if err != nil {
			if !errors.As(err, &te) {
				t.Fatalf("untyped error %v", err)
			}
			n := strings.Count(content, old)
			switch te.Code {
			case CodeEditNoMatch:
				if n != 0 {
					t.Fatalf("no match reported for %d occurrences", n)
				}
			case CodeEditAmbiguous:
				crlf := strings.Count(content, strings.ReplaceAll(old, "\n", "\r\n"))
				if all || (n < 2 && crlf < 2) {
					t.Fatalf("ambiguous with all=%v, %d occurrences", all, max(n, crlf))
				}
			default:
				t.Fatalf("code %s", te.Code)
			}
			return
		}
		from, to := old, repl
		if rep.CRLF {
			from = strings.ReplaceAll(old, "\n", "\r\n")
			to = strings.ReplaceAll(strings.ReplaceAll(repl, "\r\n", "\n"), "\n", "\r\n")
		}
		n := strings.Count(content, from)
		if n == 0 || (!all && n != 1) || rep.Count != map[bool]int{true: n, false: 1}[all] {
			t.Fatalf("count %d for %d occurrences (all=%v)", rep.Count, n, all)
		}
		if want := len(content) + rep.Count*(len(to)-len(from)); len(got) != want {
			t.Fatalf("result length %d, want %d", len(got), want)
		}
		i := strings.Index(content, from)
		if !strings.HasPrefix(got, content[:i]+to) || rep.FirstLine != 1+strings.Count(content[:i], "\n") {
			t.Fatalf("first replacement misplaced: line %d", rep.FirstLine)
		}
	})
}

// FuzzRenderPage checks the paging of arbitrary text: never more than
// limit lines or (past the first line) maxBytes, valid UTF-8 out of valid
// UTF-8 in, and a continuation offset right after the last line shown.
func FuzzRenderPage(f *testing.F) {
	f.Add("a\nb\nc\n", 1, 2, 100)
	f.Add("", 3, 5, 10)
	f.Add(strings.Repeat("é", 3000), 1, 1, 50)
	f.Add("x\r\ny", 10, 1, 1)
	f.Fuzz(func(t *testing.T, text string, offset, limit, maxBytes int) {
		if offset < 1 || offset > 1<<20 || limit < 1 || limit > 1<<16 || maxBytes < 1 || maxBytes > 1<<20 {
			return
		}
		p := renderPage(text, offset, limit, maxBytes)
		lines := splitLines(text)
		shown := p.end - offset + 1
		if len(lines) == 0 {
			if shown != 0 || p.more {
				t.Fatalf("empty window: %+v", p)
			}
			return
		}
		if shown < 1 || shown > limit || shown > len(lines) {
			t.Fatalf("shown %d of %d lines (limit %d)", shown, len(lines), limit)
		}
		if p.more != (shown < len(lines)) {
			t.Fatalf("more=%v with %d of %d lines shown", p.more, shown, len(lines))
		}
		if utf8.ValidString(text) && !utf8.ValidString(p.text) {
			t.Fatal("output is not valid UTF-8")
		}
		if p.more && !strings.Contains(p.text, "offset="+strconv.Itoa(p.end+1)) {
			t.Fatal("no continuation hint")
		}
	})
}
