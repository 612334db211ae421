package search

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoredBy reports whether the rules of one .gitignore at the root
// ignore the entry at rel, deciding on the entry alone (not its parents).
func ignoredBy(rules, rel string, isDir bool) bool {
	var parsed []ignoreRule
	for _, line := range strings.Split(rules, "\n") {
		if r, ok := parseIgnoreLine(line); ok {
			parsed = append(parsed, r)
		}
	}
	l := (*ignoreLayer)(nil).push(compileRules("", parsed))
	if l == nil {
		return false
	}
	dir, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		dir, name = rel[:i], rel[i+1:]
	}
	return l.ignored(dir, name, isDir)
}

// TestIgnoreRuleSemantics: the examples and rules of gitignore(5) and
// check-ignore behaviour, one entry at a time.
func TestIgnoreRuleSemantics(t *testing.T) {
	tests := []struct {
		rules string
		path  string
		dir   bool
		want  bool
	}{
		// "hello.*" matches any file or directory whose name begins with "hello.".
		{"hello.*", "hello.txt", false, true},
		{"hello.*", "a/b/hello.c", false, true},
		{"hello.*", "hello", false, false},
		// "foo/" matches a directory foo, not a regular file foo.
		{"foo/", "foo", true, true},
		{"foo/", "foo", false, false},
		{"foo/", "a/foo", true, true},
		// A slash at the beginning or middle anchors to the .gitignore's directory.
		{"doc/frotz/", "doc/frotz", true, true},
		{"doc/frotz/", "a/doc/frotz", true, false},
		{"/bar", "bar", false, true},
		{"/bar", "a/bar", false, false},
		{"bar", "a/bar", false, true},
		{"doc/frotz", "doc/frotz", false, true},
		{"doc/frotz", "x/doc/frotz", false, false},
		// "*" matches anything except a slash.
		{"foo/*", "foo/test.json", false, true},
		{"foo/*", "foo/bar/hello.c", false, false},
		{"doc/*.txt", "doc/notes.txt", false, true},
		{"doc/*.txt", "doc/server/arch.txt", false, false},
		{"*.txt", "doc/server/arch.txt", false, true},
		// "?" and brackets match one character, never a slash.
		{"?.txt", "a.txt", false, true},
		{"?.txt", "ab.txt", false, false},
		{"a?b", "a/b", false, false},
		{"[a-c].txt", "b.txt", false, true},
		{"[a-c].txt", "d.txt", false, false},
		{"[!a-c].txt", "d.txt", false, true},
		{"[^a-c].txt", "a.txt", false, false},
		{"[[:digit:]]x", "7x", false, true},
		{"[[:digit:]]x", "ax", false, false},
		{"[]]x", "]x", false, true},
		// Leading "**/" matches in all directories.
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", true, true},
		{"**/foo/bar", "x/foo/bar", false, true},
		{"**/foo/bar", "foo/bar", false, true},
		// Trailing "/**" matches everything inside, not the directory itself.
		{"abc/**", "abc/x", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"abc/**", "abc", true, false},
		// "/**/" matches zero or more directories.
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/xb", false, false},
		// Other consecutive asterisks are regular asterisks.
		{"a**b", "axxb", false, true},
		{"a**b", "ax/b", false, false},
		{"**.go", "x.go", false, true},
		// Negation: the last matching pattern decides.
		{"*.html\n!foo.html", "foo.html", false, false},
		{"*.html\n!foo.html", "bar.html", false, true},
		{"!foo.html\n*.html", "foo.html", false, true},
		{"/*\n!/foo\n/foo/*\n!/foo/bar", "foo", true, false},
		{"/*\n!/foo\n/foo/*\n!/foo/bar", "foo/bar", true, false},
		{"/*\n!/foo\n/foo/*\n!/foo/bar", "foo/baz", true, true},
		{"/*\n!/foo\n/foo/*\n!/foo/bar", "other", false, true},
		// A directory-only negation does not re-include a file.
		{"x*\n!x/", "x", false, true},
		{"x*\n!x/", "x", true, false},
		// Escapes: "\#" and "\!" are literal; "\*" is a literal star.
		{`\#notes`, "#notes", false, true},
		{"#notes", "#notes", false, false},
		{`\!important`, "!important", false, true},
		{`\*.c`, "*.c", false, true},
		{`\*.c`, "a.c", false, false},
		// Trailing spaces are ignored unless escaped; leading ones are kept.
		{"foo   ", "foo", false, true},
		{`foo\ `, "foo ", false, true},
		{`foo\ `, "foo", false, false},
		{" foo", "foo", false, false},
		{" foo", " foo", false, true},
		// Blank lines, comments and CRLF endings.
		{"\n\n# *.go\n", "a.go", false, false},
		{"*.go\r", "a.go", false, true},
		// Suffix tables: several dots, and a suffix that is not an extension.
		{"*.tar.gz", "a.tar.gz", false, true},
		{"*.tar.gz", "a.gz", false, false},
		{"*~", "notes.txt~", false, true},
		{"*.o\n!keep.o", "keep.o", false, false},
		{"!keep.o\n*.o", "keep.o", false, true},
		{"build/\n!build", "build", true, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%s/dir=%v", tt.rules, tt.path, tt.dir), func(t *testing.T) {
			if got := ignoredBy(tt.rules, tt.path, tt.dir); got != tt.want {
				t.Fatalf("ignored = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWildmatch: cases from git's t/t3070-wildmatch.sh (pathname mode).
func TestWildmatch(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          bool
	}{
		{"foo", "foo", true},
		{"bar", "foo", false},
		{"", "", true},
		{"???", "foo", true},
		{"??", "foo", false},
		{"*", "foo", true},
		{"f*", "foo", true},
		{"*f", "foo", false},
		{"*foo*", "foo", true},
		{"*ob*a*r*", "foobar", true},
		{"*ab", "aaaaaaabababab", true},
		{`foo\*`, "foo*", true},
		{`foo\*bar`, "foobar", false},
		{`f\\oo`, `f\oo`, true},
		{"*[al]?", "ball", true},
		{"[ten]", "ten", false},
		{"**[!te]", "ten", true},
		{"**[!ten]", "ten", false},
		{"t[a-g]n", "ten", true},
		{"t[!a-g]n", "ten", false},
		{"t[!a-g]n", "ton", true},
		{"t[^a-g]n", "ton", true},
		{"a[]]b", "a]b", true},
		{"a[]-]b", "a-b", true},
		{"a[]-]b", "a]b", true},
		{"a[]-]b", "aab", false},
		{"a[]a-]b", "aab", true},
		{"]", "]", true},
		{"foo*bar", "foo/baz/bar", false},
		{"foo**bar", "foo/baz/bar", false},
		{"foo**bar", "foobazbar", true},
		{"foo/**/bar", "foo/baz/bar", true},
		{"foo/**/**/bar", "foo/baz/bar", true},
		{"foo/**/bar", "foo/b/a/z/bar", true},
		{"foo/**/bar", "foo/bar", true},
		{"foo/**/**/bar", "foo/bar", true},
		{"foo?bar", "foo/bar", false},
		{"foo[/]bar", "foo/bar", false},
		{"foo[^a-z]bar", "foo/bar", false},
		{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo/bar", false},
		{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo-bar", true},
		{"**/foo", "foo", true},
		{"**/foo", "XXX/foo", true},
		{"**/foo", "bar/baz/foo", true},
		{"*/foo", "bar/baz/foo", false},
		{"**/bar*", "foo/bar/baz", false},
		{"**/bar/*", "deep/foo/bar/baz", true},
		{"**/bar/*", "deep/foo/bar/baz/", false},
		{"**/bar/**", "deep/foo/bar/baz/", true},
		{"**/bar/*", "deep/foo/bar", false},
		{"**/bar/**", "deep/foo/bar/", true},
		{"**/bar**", "foo/bar/baz", false},
		{"*/bar/**", "foo/bar/baz/x", true},
		{"*/bar/**", "deep/foo/bar/baz/x", false},
		{"**/bar/*/*", "deep/foo/bar/baz/x", true},
		{"a[c-c]st", "acrt", false},
		{"a[c-c]rt", "acrt", true},
		{"[!]-]", "]", false},
		{"[!]-]", "a", true},
		{`\`, "", false},
		{`\`, `\`, false},
		{`*/\`, `XXX/\`, false},
		{`*/\\`, `XXX/\`, true},
		{"foo", "foo", true},
		{"@foo", "@foo", true},
		{"@foo", "foo", false},
		{`\[ab]`, "[ab]", true},
		{"[[]ab]", "[ab]", true},
		{"[[:]ab]", "[ab]", true},
		{"[[::]ab]", "[ab]", false},
		{"[[:digit]ab]", "[ab]", true},
		{`[\[:]ab]`, "[ab]", true},
		{`\??\?b`, "?a?b", true},
		{`\a\b\c`, "abc", true},
		{"", "foo", false},
		{"**/t[o]", "foo/bar/baz/to", true},
		{"[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true},
		{"[[:digit:][:upper:][:space:]]", "a", false},
		{"[[:digit:][:upper:][:space:]]", "A", true},
		{"[[:digit:][:upper:][:space:]]", "1", true},
		{"[[:digit:][:upper:][:spaci:]]", "1", false},
		{"[[:xdigit:]]", "5", true},
		{"[[:xdigit:]]", "f", true},
		{"[[:xdigit:]]", "g", false},
		{"[a-c[:digit:]x-z]", "5", true},
		{"[a-c[:digit:]x-z]", "b", true},
		{"[a-c[:digit:]x-z]", "y", true},
		{"[a-c[:digit:]x-z]", "q", false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", false},
		{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", true},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", true},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", false},
		{"*/*/*", "foo/bba/arr", true},
		{"*/*/*", "foo/bb/aa/rr", false},
		{"**/**/**", "foo/bb/aa/rr", true},
		{"*X*i", "abcXdefXghi", true},
		{"*/*X*/*/*i", "ab/cXd/efXg/hi", true},
		{"**/*X*/**/*i", "ab/cXd/efXg/hi", true},
	}
	for _, tt := range tests {
		if got := wildmatch(tt.pattern, tt.text) == wmMatch; got != tt.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", tt.pattern, tt.text, got, tt.want)
		}
	}
}

func TestTrimTrailingSpaces(t *testing.T) {
	for in, want := range map[string]string{
		"a  ": "a", `a\ `: `a\ `, `a\  `: `a\ `, "a\t": "a\t", `a\`: `a\`, "  ": "", "a b": "a b",
	} {
		if got := trimTrailingSpaces(in); got != want {
			t.Errorf("trimTrailingSpaces(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGlobalExcludesFile: core.excludesFile is read from git's config
// files directly, the last setting winning; unset, git's default file.
func TestGlobalExcludesFile(t *testing.T) {
	home := t.TempDir()
	gitDir := filepath.Join(t.TempDir(), ".git")
	write := func(p, c string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home, "GIT_CONFIG_NOSYSTEM": "1"}
	getenv := func(k string) string { return env[k] }
	if got, want := globalExcludesFile(gitDir, getenv), filepath.Join(home, ".config/git/ignore"); got != want {
		t.Fatalf("default: %q, want %q", got, want)
	}
	env["XDG_CONFIG_HOME"] = filepath.Join(home, "xdg")
	if got, want := globalExcludesFile(gitDir, getenv), filepath.Join(home, "xdg/git/ignore"); got != want {
		t.Fatalf("xdg default: %q, want %q", got, want)
	}
	write(filepath.Join(home, "xdg/git/config"), "[core]\n\texcludesFile = /from/xdg\n")
	if got := globalExcludesFile(gitDir, getenv); got != "/from/xdg" {
		t.Fatalf("xdg config: %q", got)
	}
	write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = x\n[Core]\n\tExcludesFile = \"~/my ignore\" ; comment\n[core \"sub\"]\n\texcludesfile = /not/this\n")
	if got, want := globalExcludesFile(gitDir, getenv), filepath.Join(home, "my ignore"); got != want {
		t.Fatalf("~/.gitconfig: %q, want %q", got, want)
	}
	write(filepath.Join(gitDir, "config"), "[core]\n\texcludesfile = /from/repo # comment\n")
	if got := globalExcludesFile(gitDir, getenv); got != "/from/repo" {
		t.Fatalf("repository config: %q", got)
	}
}

// gitignorePatterns is the pool the generated trees draw their rules from.
var gitignorePatterns = []string{
	"*.log", "!keep.log", "build/", "/dist", "gen", "*.tmp", "!*.tmp", "docs/**/draft.md", "**/cache",
	"a/**/z", "[ab]*.txt", "?.go", "!b.go", "sub/", "/sub/x", "*.o", "x*", "!x/", "vendor/*", "!vendor/keep",
	"deep/*/leaf", `\#hash`, "trailing  ", "*.tar.gz", "**/tmp/**", "!important*", "n?de_*", "f[0-9]",
}

// genIgnoreTree writes a random tree of files named from a small pool
// with .gitignore files drawn from gitignorePatterns; it returns the
// relative paths of all files written (ignore files included).
func genIgnoreTree(t *testing.T, root string, seed uint64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"a", "b", "x", "build", "dist", "gen", "sub", "docs", "cache", "z", "vendor", "keep",
		"deep", "leaf", "tmp", "node_x", "f1", "fx", "important.tmp", "a.txt", "c.txt", "b.go", "ab.go",
		"main.go", "app.log", "keep.log", "x.o", "#hash", "trailing", "a.tar.gz", "draft.md", "y"}
	var files []string
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 || dir == "" {
			var rules []string
			for range 2 + rng.IntN(6) {
				rules = append(rules, gitignorePatterns[rng.IntN(len(gitignorePatterns))])
			}
			p := filepath.Join(dir, ".gitignore")
			if err := os.WriteFile(filepath.Join(root, p), []byte(strings.Join(rules, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(p))
		}
		used := map[string]bool{}
		for range 4 + rng.IntN(8) {
			name := names[rng.IntN(len(names))]
			if used[name] {
				continue
			}
			used[name] = true
			p := filepath.Join(dir, name)
			if depth < 4 && rng.IntN(5) < 2 {
				fill(p, depth+1)
				continue
			}
			if err := os.WriteFile(filepath.Join(root, p), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(p))
		}
	}
	fill("", 0)
	return files
}

// TestIgnoreMatchesGit generates trees with nested .gitignore files,
// .git/info/exclude and a global excludes file, and checks that the walk
// keeps exactly what `git ls-files --others --exclude-standard` lists
// and skips exactly what `git check-ignore` reports.
func TestIgnoreMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the cross-check against git check-ignore needs it")
	}
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "xdg"), "GIT_CONFIG_NOSYSTEM=1",
				"PATH=" + os.Getenv("PATH")}
			getenv := func(k string) string {
				for _, kv := range env {
					if v, ok := strings.CutPrefix(kv, k+"="); ok {
						return v
					}
				}
				return ""
			}
			git := func(stdin string, args ...string) string {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir, cmd.Env, cmd.Stdin = root, env, strings.NewReader(stdin)
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				if err := cmd.Run(); err != nil && !(args[0] == "check-ignore" && cmd.ProcessState.ExitCode() == 1) {
					t.Fatalf("git %v: %v: %s", args, err, errOut.String())
				}
				return out.String()
			}
			git("", "init", "-q")
			all := genIgnoreTree(t, root, seed)
			rng := rand.New(rand.NewPCG(seed, 9))
			exclude := gitignorePatterns[rng.IntN(len(gitignorePatterns))] + "\n"
			if err := os.WriteFile(filepath.Join(root, ".git/info/exclude"), []byte(exclude), 0o644); err != nil {
				t.Fatal(err)
			}
			if seed%2 == 1 {
				// The global excludes file: from core.excludesFile, else git's default.
				global := filepath.Join(home, "global-ignore")
				if seed%4 == 1 {
					os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\texcludesFile = ~/global-ignore\n"), 0o644)
				} else {
					global = filepath.Join(home, "xdg", "git", "ignore")
					os.MkdirAll(filepath.Dir(global), 0o755)
				}
				os.WriteFile(global, []byte(gitignorePatterns[rng.IntN(len(gitignorePatterns))]+"\n"), 0o644)
			}
			var kept []string
			if _, err := walk(context.Background(), root, loadIgnoresEnv(root, root, getenv), func(path string, _ fs.DirEntry) error {
				kept = append(kept, relTo(root, path))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(kept)
			lsFiles := strings.Fields(git("", "ls-files", "--others", "--exclude-standard"))
			slices.Sort(lsFiles)
			if !slices.Equal(kept, lsFiles) {
				t.Errorf("walk kept\n%v\ngit ls-files --others --exclude-standard\n%v", kept, lsFiles)
			}
			ignored := strings.Fields(git(strings.Join(all, "\n")+"\n", "check-ignore", "--stdin"))
			slices.Sort(ignored)
			var skipped []string
			for _, p := range all {
				if _, ok := slices.BinarySearch(kept, p); !ok {
					skipped = append(skipped, p)
				}
			}
			slices.Sort(skipped)
			if !slices.Equal(skipped, ignored) {
				t.Errorf("walk skipped\n%v\ngit check-ignore\n%v", skipped, ignored)
			}
		})
	}
}
