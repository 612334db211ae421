package search

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRequiredLiteral(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"NEEDLE", "NEEDLE"},
		{`func \w+\(ctx`, "func "},
		{`\w+\(context`, "(context"},
		{`foo.*barbaz`, "barbaz"},
		{`(hello) world`, " world"},
		{`(?:abc)+x`, "abc"},
		{`x{2,}`, "x"},
		{`^package main$`, "package main"},
		{`a|b`, ""},
		{`(?i)needle`, ""},
		{`(?i)123`, "123"},
		{`x*`, ""},
		{`[ab]c`, "c"},
		{`\x{FFFD}`, ""},
		{`(`, ""},
	}
	for _, tt := range tests {
		if got := string(requiredLiteral(tt.expr)); got != tt.want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// referenceGrep is the plain sequential definition grep must keep: files
// in order, binary ones (a NUL in the first sniffBytes) skipped, each
// line (without "\r", at most maxScanLine bytes) matched, cut at limit.
func referenceGrep(t *testing.T, dir string, names []string, re *regexp.Regexp, limit int) (string, int, bool) {
	var b strings.Builder
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
			continue
		}
		lines := bytes.Split(data, []byte{'\n'})
		if len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		for i, line := range lines {
			line = bytes.TrimSuffix(line, []byte{'\r'})
			line = line[:min(len(line), maxScanLine)]
			if !re.Match(line) {
				continue
			}
			if n == limit {
				return b.String(), n, true
			}
			n++
			fmt.Fprintf(&b, "%s:%d:%s\n", name, i+1, cutText(line, MaxMatchChars))
		}
	}
	return b.String(), n, false
}

// TestGrepMatchesReference: the parallel, block-reading, literal-first
// search gives exactly the reference's lines, numbers and cut, on files
// spanning several blocks, with CRLF endings, overlong lines and
// binaries.
func TestGrepMatchesReference(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "NEEDLE", "needle", "func main()", "x", "", "  ", "\t", "needles"}
	var names []string
	for i := range 60 {
		var b bytes.Buffer
		size := rng.IntN(4000)
		if i%20 == 0 {
			size = 16_000 + rng.IntN(4000) // several blocks
		}
		for range size {
			for range rng.IntN(6) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			if rng.IntN(5) == 0 {
				b.WriteByte('\r')
			}
			b.WriteByte('\n')
		}
		switch i % 7 {
		case 1: // an overlong line, longer than a block, with matches on either side of maxScanLine
			b.WriteString(strings.Repeat("y", maxScanLine-10) + "NEEDLE" + strings.Repeat("z", blockSize) + "NEEDLE\nNEEDLE after\n")
		case 2: // binary within the sniffed start
			data := b.Bytes()
			if len(data) > 100 {
				data[50] = 0
			}
		case 3: // a NUL after the sniffed start: searched
			b.WriteString(strings.Repeat("q", sniffBytes) + "\x00NEEDLE\n")
		case 4: // no final newline
			b.WriteString("last NEEDLE")
		}
		name := fmt.Sprintf("f%03d.txt", i)
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	for _, expr := range []string{"NEEDLE", `^needle`, `(?i)needle`, `be+ta\s+x`, `a|NEEDLE`, `\r`} {
		for _, limit := range []int{1, 7, 1 << 30} {
			t.Run(fmt.Sprintf("%s/%d", expr, limit), func(t *testing.T) {
				re := regexp.MustCompile(expr)
				want, wantN, wantCut := referenceGrep(t, dir, names, re, limit)
				g := newGrepRun(re, limit, true)
				if _, err := g.walk(context.Background(), dir, nil, func(string) bool { return true }, func(p string) string { return relTo(dir, p) }); err != nil {
					t.Fatal(err)
				}
				if got := g.out.String(); got != want || g.matches != wantN || g.cut != wantCut {
					t.Fatalf("got %d matches (cut %v), want %d (cut %v); first difference at byte %d",
						g.matches, g.cut, wantN, wantCut, firstDiff(got, want))
				}
			})
		}
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestGrepStopsAtTheLimit: once the limit is passed, no more files are
// handed out (the walk stops), counted with a keep func.
func TestGrepStopsAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), []byte("hit\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := newGrepRun(regexp.MustCompile("hit"), 10, true)
	offered := 0
	if _, err := g.walk(context.Background(), dir, nil, func(string) bool { offered++; return true }, func(p string) string { return p }); err != nil {
		t.Fatal(err)
	}
	if !g.cut || g.matches != 10 {
		t.Fatalf("matches %d, cut %v", g.matches, g.cut)
	}
	// The merge window bounds how far the walk runs on.
	if offered > 11+grepWindow {
		t.Fatalf("%d files offered after the limit of 10", offered)
	}
}
