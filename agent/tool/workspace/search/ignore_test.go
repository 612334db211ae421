package search

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// ignoreTree is a repository exercising the ignore rules; every file but
// the ignore files holds "hello".
var ignoreTree = map[string]string{
	".git/info/exclude": "secret.txt\n",
	".gitignore":        "# build outputs\nnode_modules/\n*.log\n!keep.log\n/build\ndist/\ndocs/**/draft.md\n",
	"main.go":           "", "secret.txt": "", "app.log": "", "keep.log": "", "a.gen.go": "", "local/l.go": "",
	// A deeper ignore file would re-include these, were the directory entered.
	"node_modules/.gitignore": "!*\n", "node_modules/pkg/index.js": "", "node_modules/pkg/debug.log": "",
	"build/out.go": "", "build/trace.log": "",
	"src/.gitignore":   "*.gen.go\n!important.log\n/local/\n",
	"src/build/gen.go": "", "src/dist": "", "src/sub/dist/x.go": "", "src/a.gen.go": "",
	"src/important.log": "", "src/other.log": "", "src/local/l.go": "",
	"docs/final.md": "", "docs/a/b/draft.md": "", "docs/draft.md": "",
}

func newIgnoreFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cwd: t.TempDir(), perms: &local.Scripted{}}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: f.cwd, Files: local.Files{}, Permissions: f.perms})...)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	for p, c := range ignoreTree {
		if c == "" {
			c = "hello\n"
		}
		f.write(t, filepath.Join(f.cwd, p), c)
	}
	return f
}

func TestSearchHonoursIgnoreFiles(t *testing.T) {
	f := newIgnoreFixture(t)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []string // glob: the files; grep: the files with "hello"
	}{
		{name: "nested, negated, dir-only, anchored, ** and info/exclude", tool: GlobToolName, args: map[string]any{"pattern": "*"},
			want: []string{".gitignore", "a.gen.go", "docs/final.md", "keep.log", "local/l.go", "main.go",
				"src/.gitignore", "src/build/gen.go", "src/dist", "src/important.log"}},
		{name: "grep skips the same files", tool: GrepToolName, args: map[string]any{"pattern": "hello"},
			want: []string{"a.gen.go", "docs/final.md", "keep.log", "local/l.go", "main.go",
				"src/build/gen.go", "src/dist", "src/important.log"}},
		{name: "rules from above a searched subdirectory apply", tool: GrepToolName, args: map[string]any{"pattern": "hello", "path": "src"},
			want: []string{"src/build/gen.go", "src/dist", "src/important.log"}},
		{name: "include_ignored", tool: GlobToolName, args: map[string]any{"pattern": "*", "include_ignored": true},
			want: []string{".gitignore", "a.gen.go", "app.log", "build/out.go", "build/trace.log",
				"docs/a/b/draft.md", "docs/draft.md", "docs/final.md", "keep.log", "local/l.go", "main.go",
				"node_modules/.gitignore", "node_modules/pkg/debug.log", "node_modules/pkg/index.js",
				"secret.txt", "src/.gitignore", "src/a.gen.go", "src/build/gen.go", "src/dist",
				"src/important.log", "src/local/l.go", "src/other.log", "src/sub/dist/x.go"}},
		{name: "grep include_ignored", tool: GrepToolName, args: map[string]any{"pattern": "hello", "path": "src", "include_ignored": true},
			want: []string{"src/a.gen.go", "src/build/gen.go", "src/dist", "src/important.log", "src/local/l.go",
				"src/other.log", "src/sub/dist/x.go"}},
		{name: "an ignored directory named as path is searched", tool: GlobToolName, args: map[string]any{"pattern": "*", "path": "node_modules"},
			want: []string{"node_modules/.gitignore", "node_modules/pkg/debug.log", "node_modules/pkg/index.js"}},
		{name: "other rules still apply inside an ignored path", tool: GrepToolName, args: map[string]any{"pattern": "hello", "path": "build"},
			want: []string{"build/out.go"}},
		{name: "nothing found: the skipped ignored entries are told", tool: GlobToolName, args: map[string]any{"pattern": "*.js"},
			want: []string{`No files match "*.js".`, "[Skipped as ignored by .gitignore or .git/info/exclude: 10 files or directories; set include_ignored to search them too.]"}},
		{name: "grep: nothing found, the skipped ignored entries are told", tool: GrepToolName, args: map[string]any{"pattern": "nowhere", "path": "docs"},
			want: []string{`No matches for "nowhere".`, "[Skipped as ignored by .gitignore or .git/info/exclude: 2 files or directories; set include_ignored to search them too.]"}},
		{name: "an ignored file named as path is searched", tool: GrepToolName, args: map[string]any{"pattern": "hello", "path": "app.log"},
			want: []string{"app.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, tt.tool, tt.args)
			if res.IsError {
				t.Fatalf("error %q", workspacetest.Text(res))
			}
			want := strings.Join(tt.want, "\n")
			if tt.tool == GrepToolName && !strings.HasPrefix(tt.want[0], "No ") {
				want = strings.Join(tt.want, ":1:hello\n") + ":1:hello"
			}
			if got := strings.TrimSpace(workspacetest.Text(res)); got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestIgnoredDirectoriesNotEntered: the walk never reads below an ignored
// directory (its ignore file would have re-included its files).
func TestIgnoredDirectoriesNotEntered(t *testing.T) {
	f := newIgnoreFixture(t)
	dir, err := filepath.EvalSymlinks(f.cwd)
	if err != nil {
		t.Fatal(err)
	}
	ig := loadIgnores(dir, dir)
	var files []string
	var mu sync.Mutex
	entered := map[string]bool{}
	w := newWalker(ig)
	w.entered = func(d string) {
		mu.Lock()
		defer mu.Unlock()
		entered[relTo(dir, d)] = true
	}
	if _, err := w.run(context.Background(), dir, func(path string, _ fs.DirEntry) error {
		files = append(files, relTo(dir, path))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".", "src", "src/build", "src/sub", "docs", "docs/a/b"} {
		if !entered[d] {
			t.Errorf("%s not entered; entered %v", d, entered)
		}
	}
	for _, d := range []string{"node_modules", "node_modules/pkg", "build", "src/sub/dist", "src/local", ".git"} {
		if entered[d] {
			t.Errorf("ignored %s entered", d)
		}
	}
	if len(files) != 10 {
		t.Errorf("walked %v", files)
	}
}

func TestIgnoreRepositoryLayouts(t *testing.T) {
	tests := []struct {
		name string
		// files are written under a temp dir; the session cwd is cwd below it.
		files map[string]string
		cwd   string
		path  string
		// fifo names a FIFO to make; link a symlink to "rules".
		fifo, link string
		want       []string
	}{
		{name: "no repository: the cwd's .gitignore applies to a subdirectory searched",
			files: map[string]string{"w/.gitignore": "*.log\n", "w/sub/a.go": "", "w/sub/a.log": ""},
			cwd:   "w", path: "sub", want: []string{"sub/a.go"}},
		{name: "repository root above the cwd",
			files: map[string]string{"r/.git/HEAD": "", "r/.gitignore": "*.log\n/w/gen/\n", "r/w/a.go": "", "r/w/a.log": "", "r/w/gen/g.go": "", "r/gen/top.go": ""},
			cwd:   "r/w", want: []string{"a.go"}},
		{name: "a FIFO or a symlink named .gitignore is not read",
			files: map[string]string{"w/a.go": "", "w/b.go": "", "w/sub/c.go": "", "rules": "*.go\n"},
			fifo:  "w/.gitignore", link: "w/sub/.gitignore",
			cwd: "w", want: []string{"a.go", "b.go", "sub/c.go"}},
		{name: "linked worktree: info/exclude of the common git directory",
			files: map[string]string{
				"wt/.git": "gitdir: ../main/.git/worktrees/wt\n", "wt/a.go": "", "wt/secret.go": "",
				"main/.git/worktrees/wt/commondir": "../..\n", "main/.git/info/exclude": "secret.go\n",
			},
			cwd: "wt", want: []string{"a.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := t.TempDir()
			for p, c := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(top, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(top, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fifo != "" {
				if err := syscall.Mkfifo(filepath.Join(top, tt.fifo), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.link != "" {
				if err := os.Symlink(filepath.Join(top, "rules"), filepath.Join(top, tt.link)); err != nil {
					t.Fatal(err)
				}
			}
			reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: filepath.Join(top, tt.cwd), Files: local.Files{}, Permissions: &local.Scripted{}})...)
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{reg: reg}
			args := map[string]any{"pattern": "*.go"}
			if tt.path != "" {
				args["path"] = tt.path
			}
			res := f.call(t, GlobToolName, args)
			if got, want := workspacetest.Text(res), strings.Join(tt.want, "\n"); res.IsError || got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// BenchmarkGlobIgnoreRules: glob over 100 dirs × 20 files with a root
// .gitignore of 30 rules and a 2-rule .gitignore in every directory,
// honouring the rules or not.
func BenchmarkGlobIgnoreRules(b *testing.B) {
	root := b.TempDir()
	var rules strings.Builder
	for i := range 30 {
		fmt.Fprintf(&rules, "*.ext%d\nbuild%d/\n", i, i)
	}
	files := map[string]string{".gitignore": rules.String()}
	for d := range 100 {
		files[fmt.Sprintf("pkg%03d/.gitignore", d)] = "*.tmp\n/gen/\n"
		for f := range 20 {
			files[fmt.Sprintf("pkg%03d/f%03d.go", d, f)] = ""
		}
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: root, Files: local.Files{}, Permissions: local.AllowAll{}})...)
	if err != nil {
		b.Fatal(err)
	}
	for _, include := range []bool{false, true} {
		b.Run(fmt.Sprintf("include_ignored=%v", include), func(b *testing.B) {
			args := json.RawMessage(fmt.Sprintf(`{"pattern":"**/f01*.go","include_ignored":%v}`, include))
			for b.Loop() {
				res := reg.Execute(context.Background(), tool.Invocation{Name: GlobToolName, Arguments: args, Caller: caller("s")})
				if res.IsError || res.Raw.(GlobOutput).Total != 1000 {
					b.Fatalf("%.200q", workspacetest.Text(res))
				}
			}
		})
	}
}
