package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type caller = workspacetest.Caller

type fixture struct {
	cwd, outside string
	perms        *local.Scripted
	reg          *tool.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cwd: t.TempDir(), outside: t.TempDir(), perms: &local.Scripted{}}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: f.cwd, Files: local.Files{}, Permissions: f.perms})...)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	files := map[string]string{
		"main.go":               "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n",
		"README.md":             "# Title\nhello world\n",
		"internal/a/a.go":       "package a\n// TODO: hello\n",
		"internal/a/a_test.go":  "package a\n",
		"internal/b/b.txt":      "HELLO again\r\nno\r\n",
		"web/src/app.ts":        "const hello = 1;\n",
		".git/config":           "hello from git\n",
		".git/objects/x.go":     "package x // hello\n",
		"assets/logo.png":       "\x89PNG\x00\x00hello",
		"vendor/.hidden/z.go":   "package z // hello\n",
		"docs/notes/2024/a.md":  "nothing\n",
		"docs/notes/2025/b.md":  "hello\n",
		"space dir/file one.go": "package one // hello\n",
	}
	for p, c := range files {
		f.write(t, filepath.Join(f.cwd, p), c)
	}
	f.write(t, filepath.Join(f.outside, "x.go"), "package x // hello outside\n")
	if err := os.Symlink(f.outside, filepath.Join(f.cwd, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.outside, "x.go"), filepath.Join(f.cwd, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(f.cwd, "pipe.go"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) call(t *testing.T, name string, args any) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	return f.reg.Execute(context.Background(), tool.Invocation{CallID: "c1", Name: name, Arguments: raw, Caller: caller("s")})
}

func TestGlob(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		args map[string]any
		want string
		code string
	}{
		{name: "name at any depth", args: map[string]any{"pattern": "*.go"},
			want: "internal/a/a.go\ninternal/a/a_test.go\nlink.go\nmain.go\npipe.go\nspace dir/file one.go\nvendor/.hidden/z.go"},
		{name: "doublestar", args: map[string]any{"pattern": "internal/**/*_test.go"}, want: "internal/a/a_test.go"},
		{name: "top level only", args: map[string]any{"pattern": "./*.md"}, want: "README.md"},
		{name: "alternatives", args: map[string]any{"pattern": "**/*.{ts,md}"}, want: "README.md\ndocs/notes/2024/a.md\ndocs/notes/2025/b.md\nweb/src/app.ts"},
		{name: "under a path", args: map[string]any{"pattern": "**/*.md", "path": "docs"}, want: "docs/notes/2024/a.md\ndocs/notes/2025/b.md"},
		{name: "no match", args: map[string]any{"pattern": "*.rs"}, want: `No files match "*.rs".`},
		{name: "bad pattern", args: map[string]any{"pattern": "[a-"}, code: tool.CodeInvalidArgs},
		{name: "absolute pattern", args: map[string]any{"pattern": "/etc/*"}, code: tool.CodeInvalidArgs},
		{name: "missing path", args: map[string]any{"pattern": "*", "path": "nope"}, code: workspace.CodeFileNotFound},
		{name: "path is a file", args: map[string]any{"pattern": "*", "path": "main.go"}, code: tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, GlobToolName, tt.args)
			if tt.code != "" {
				if workspacetest.ErrCode(res) != tt.code {
					t.Fatalf("%q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), tt.code)
				}
				return
			}
			if res.IsError || workspacetest.Text(res) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", workspacetest.Text(res), tt.want)
			}
			if res.Display == nil || len(res.Display.Locations) != 1 {
				t.Fatalf("display %+v", res.Display)
			}
		})
	}
	if n := len(f.perms.Requests()); n != 0 {
		t.Fatalf("searches inside the cwd asked %d times", n)
	}
}

func TestGlobCapped(t *testing.T) {
	f := newFixture(t)
	for i := range MaxGlobResults + 20 {
		f.write(t, filepath.Join(f.cwd, "many", fmt.Sprintf("f%04d.txt", i)), "")
	}
	res := f.call(t, GlobToolName, map[string]any{"pattern": "many/*.txt"})
	out := res.Raw.(GlobOutput)
	if len(out.Files) != MaxGlobResults || out.Total != MaxGlobResults+20 || !out.Truncated {
		t.Fatalf("raw %d files, total %d, truncated %v", len(out.Files), out.Total, out.Truncated)
	}
	if out.Files[0] != "many/f0000.txt" || !strings.Contains(workspacetest.Text(res), fmt.Sprintf("%d of %d matching files shown", MaxGlobResults, MaxGlobResults+20)) {
		t.Fatalf("first %s; text tail %q", out.Files[0], workspacetest.Text(res)[len(workspacetest.Text(res))-100:])
	}
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		args map[string]any
		want string
		code string
	}{
		{name: "whole tree, skipping .git, binaries, symlinks and FIFOs", args: map[string]any{"pattern": "hello"},
			want: "README.md:2:hello world\ndocs/notes/2025/b.md:1:hello\ninternal/a/a.go:2:// TODO: hello\nspace dir/file one.go:1:package one // hello\nvendor/.hidden/z.go:1:package z // hello\nweb/src/app.ts:1:const hello = 1;"},
		{name: "case insensitive, CRLF trimmed", args: map[string]any{"pattern": "^hello", "case_insensitive": true, "path": "internal"},
			want: "internal/b/b.txt:1:HELLO again"},
		{name: "glob filter", args: map[string]any{"pattern": "hello", "glob": "*.go"},
			want: "internal/a/a.go:2:// TODO: hello\nspace dir/file one.go:1:package one // hello\nvendor/.hidden/z.go:1:package z // hello"},
		{name: "one file", args: map[string]any{"pattern": `println\(`, "path": "main.go"}, want: "main.go:4:\tprintln(\"Hello\")"},
		{name: "limit", args: map[string]any{"pattern": "hello", "limit": 2},
			want: "README.md:2:hello world\ndocs/notes/2025/b.md:1:hello\n\n[Stopped at 2 matches; narrow the pattern, path or glob, or raise limit, to see more.]"},
		{name: "exactly the limit is not cut", args: map[string]any{"pattern": "Title|world", "limit": 2}, want: "README.md:1:# Title\nREADME.md:2:hello world"},
		{name: "no match", args: map[string]any{"pattern": "zebra"}, want: `No matches for "zebra".`},
		{name: "bad regexp", args: map[string]any{"pattern": "a(b"}, code: tool.CodeInvalidArgs},
		{name: "backreference", args: map[string]any{"pattern": `(a)\1`}, code: tool.CodeInvalidArgs},
		{name: "bad glob", args: map[string]any{"pattern": "a", "glob": "[z-"}, code: tool.CodeInvalidArgs},
		{name: "missing path", args: map[string]any{"pattern": "a", "path": "nope"}, code: workspace.CodeFileNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, GrepToolName, tt.args)
			if tt.code != "" {
				if workspacetest.ErrCode(res) != tt.code {
					t.Fatalf("%q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), tt.code)
				}
				return
			}
			if res.IsError || strings.TrimSpace(workspacetest.Text(res)) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", workspacetest.Text(res), tt.want)
			}
		})
	}
}

func TestGrepLongLines(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("x", 200<<10)
	f.write(t, filepath.Join(f.cwd, "long", "l.txt"), "needle "+long+"\n"+long+" needle\nshort needle\n")
	res := f.call(t, GrepToolName, map[string]any{"pattern": "needle", "path": "long"})
	got := workspacetest.Text(res)
	// The second line's match lies past what one line is scanned for.
	if !strings.Contains(got, "long/l.txt:1:needle xxx") || !strings.Contains(got, "long/l.txt:3:short needle") || strings.Contains(got, ":2:") {
		t.Fatalf("got %.300s", got)
	}
	if len(got) > 2*MaxMatchChars+200 {
		t.Fatalf("output of %d bytes: long lines not cut", len(got))
	}
}

func TestSearchOutsideCwdAsks(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		for _, call := range []struct {
			name string
			args map[string]any
		}{
			{GlobToolName, map[string]any{"pattern": "*.go", "path": "linked"}},
			{GrepToolName, map[string]any{"pattern": "outside", "path": "../" + "OUT"}},
			{GrepToolName, map[string]any{"pattern": "outside", "path": "OUT/x.go"}},
		} {
			t.Run(fmt.Sprintf("%s %v allowed=%v", call.name, call.args["path"], allowed), func(t *testing.T) {
				f := newFixture(t)
				for k, v := range call.args {
					if s, ok := v.(string); ok {
						call.args[k] = strings.Replace(s, "OUT", filepath.Base(f.outside), 1)
						if strings.HasPrefix(s, "OUT/") {
							call.args[k] = filepath.Join(f.outside, strings.TrimPrefix(s, "OUT/"))
						}
					}
				}
				if !allowed {
					f.perms.Decide = local.Reject
				}
				// The outside dir is a sibling temp dir: reach it by ".." from cwd.
				if p := call.args["path"].(string); strings.HasPrefix(p, "../") {
					rel, _ := filepath.Rel(f.cwd, f.outside)
					call.args["path"] = rel
				}
				res := f.call(t, call.name, call.args)
				reqs := f.perms.Requests()
				if len(reqs) != 1 || !reqs[0].OutsideCwd || reqs[0].Kind != workspace.KindSearch || reqs[0].Tool != call.name {
					t.Fatalf("requests %+v", reqs)
				}
				found := strings.Contains(workspacetest.Text(res), "linked/x.go") || strings.Contains(workspacetest.Text(res), "x.go:1:package x // hello outside")
				if allowed == res.IsError || allowed != found {
					t.Fatalf("allowed=%v result %q", allowed, workspacetest.Text(res))
				}
				if !allowed && workspacetest.ErrCode(res) != workspace.CodePermissionRejected {
					t.Fatalf("code %q", workspacetest.ErrCode(res))
				}
			})
		}
	}
}

func TestSearchCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := f.reg.Execute(ctx, tool.Invocation{Name: GrepToolName, Arguments: json.RawMessage(`{"pattern":"x"}`), Caller: caller("s")})
	if workspacetest.ErrCode(res) != tool.CodeAbortedBeforeStart {
		t.Fatalf("%q", workspacetest.ErrCode(res))
	}
	// Directly, past the registry's own check: the walk stops.
	for _, name := range []string{GrepToolName, GlobToolName} {
		tl, _ := tool.NewRegistry(Tools(workspace.Static{Cwd: f.cwd})...)
		tt, _ := tl.Get(name)
		res, err := tt.Execute(ctx, tool.Invocation{Arguments: json.RawMessage(`{"pattern":"*"}`), Caller: caller("s")})
		if err == nil && !res.IsError {
			t.Errorf("a cancelled %s succeeded: %q", name, workspacetest.Text(res))
		}
	}
}
