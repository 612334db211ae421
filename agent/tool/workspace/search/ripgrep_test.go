package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/internal/benchtree"
)

// benchTreeEnv names a tree (made by internal/benchtree, or any
// repository) for the ripgrep cross-check and benchmark; see
// scripts/bench-search.sh.
const benchTreeEnv = "ACP_SEARCH_TREE"

// rgArgs make ripgrep list and search what glob and grep do: hidden
// files too, but not .git.
var rgArgs = []string{"--hidden", "--glob", "!.git"}

func ripgrep(tb testing.TB) string {
	tb.Helper()
	rg, err := exec.LookPath("rg")
	if err != nil {
		tb.Skip("ripgrep (rg) is not installed; scripts/bench-search.sh installs it")
	}
	return rg
}

// rgRun runs rg in dir and returns its output lines, sorted.
func rgRun(tb testing.TB, rg, dir string, env []string, args ...string) []string {
	tb.Helper()
	cmd := exec.Command(rg, append(slices.Clone(rgArgs), args...)...)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		tb.Fatalf("rg %v: %v: %s", args, err, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// TestSameAsRipgrep: on a generated tree (the one ACP_SEARCH_TREE names,
// else a small one), the walk lists the same files as `rg --files` and
// grep finds the same lines as `rg -n`.
func TestSameAsRipgrep(t *testing.T) {
	rg := ripgrep(t)
	dir := os.Getenv(benchTreeEnv)
	if dir == "" {
		dir = t.TempDir()
		if _, err := benchtree.Generate(dir, benchtree.Options{Files: 4000, Bytes: 16 << 20, Seed: 1}); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Neither side sees this machine's git configuration.
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	getenv := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	var files []string
	if _, err := walk(context.Background(), dir, loadIgnoresEnv(dir, dir, getenv), func(path string, _ fs.DirEntry) error {
		files = append(files, relTo(dir, path))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := rgRun(t, rg, dir, env, "--files")
	if !slices.Equal(files, want) {
		t.Errorf("walk: %d files, rg --files: %d; first difference: %s", len(files), len(want), firstDifference(files, want))
	}
	t.Logf("%d files listed by both", len(files))
	for _, pattern := range []string{benchtree.Needle, `func serve\d+` + regexp.QuoteMeta(benchtree.HandlerSuffix)} {
		re := regexp.MustCompile(pattern)
		g := newGrepRun(re, 1<<30, true)
		if _, err := g.walk(context.Background(), dir, loadIgnoresEnv(dir, dir, getenv), func(string) bool { return true },
			func(p string) string { return relTo(dir, p) }); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(g.out.String(), "\n"), "\n")
		if g.matches == 0 {
			got = nil
		}
		slices.Sort(got)
		want := rgRun(t, rg, dir, env, "-n", "--no-heading", "--with-filename", "--color", "never", pattern)
		if !slices.Equal(got, want) {
			t.Errorf("%s: grep %d lines, rg %d; first difference: %s", pattern, len(got), len(want), firstDifference(got, want))
		}
		if len(want) == 0 {
			t.Errorf("%s: no matches in the tree", pattern)
		}
		t.Logf("%s: %d lines found by both", pattern, len(got))
	}
}

func firstDifference(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("%q vs %q", a[i], b[i])
		}
	}
	if len(a) > len(b) {
		return fmt.Sprintf("%q only in ours", a[len(b)])
	}
	if len(b) > len(a) {
		return fmt.Sprintf("%q only in rg's", b[len(a)])
	}
	return "none"
}

// BenchmarkRipgrep times rg against glob and grep on the tree that
// ACP_SEARCH_TREE names, in the same run with a warm page cache (each
// sub-benchmark runs once before it is timed):
//
//	ACP_SEARCH_TREE=/tmp/acp-search-tree go test ./agent/tool/workspace/search -run '^$' -bench Ripgrep -benchtime 5x
//
// "files" is `rg --files` against `glob` with pattern "*" (every file
// listed; glob returns the first 500 and the count); "grep" is
// `rg -n PATTERN` against `grep` with limit 1000 (above the matches in a
// generated tree, so both read everything).
func BenchmarkRipgrep(b *testing.B) {
	dir := os.Getenv(benchTreeEnv)
	if dir == "" {
		b.Skip(benchTreeEnv + " names no tree; scripts/bench-search.sh makes one")
	}
	rg := ripgrep(b)
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: dir, Files: local.Files{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	runRg := func(b *testing.B, args ...string) {
		cmd := exec.Command(rg, append(slices.Clone(rgArgs), args...)...)
		cmd.Dir, cmd.Stdout = dir, io.Discard
		if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
			b.Fatal(err)
		}
	}
	runTool := func(b *testing.B, name string, args map[string]any) {
		raw, _ := json.Marshal(args)
		res := reg.Execute(context.Background(), tool.Invocation{Name: name, Arguments: raw, Caller: caller("s")})
		if res.IsError {
			b.Fatalf("%.300s", fmt.Sprint(res.Content))
		}
	}
	timed := func(name string, fn func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			fn(b) // warm the page cache and the code
			b.ResetTimer()
			for b.Loop() {
				fn(b)
			}
		})
	}
	timed("files/rg", func(b *testing.B) { runRg(b, "--files") })
	timed("files/glob", func(b *testing.B) { runTool(b, GlobToolName, map[string]any{"pattern": "*"}) })
	for _, p := range []struct{ name, pattern string }{
		{"literal", benchtree.Needle},
		{"regexp", `func serve\d+Handler\(`},
	} {
		timed("grep-"+p.name+"/rg", func(b *testing.B) { runRg(b, "-n", p.pattern) })
		timed("grep-"+p.name+"/grep", func(b *testing.B) {
			runTool(b, GrepToolName, map[string]any{"pattern": p.pattern, "limit": MaxGrepLimit})
		})
	}
}
