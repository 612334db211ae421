package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type caller = workspacetest.Caller

// fixture is a session workspace in a temp dir, with a second temp dir
// outside it, local files and a scripted gate.
type fixture struct {
	cwd, outside string
	perms        *local.Scripted
	reg          *tool.Registry
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cwd: t.TempDir(), outside: t.TempDir(), perms: &local.Scripted{}}
	env := workspace.Static{Cwd: f.cwd, Files: local.Files{MaxReadBytes: 1 << 20}, Permissions: f.perms}
	reg, err := tool.NewRegistry(Tools(env)...)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	return f
}

func (f *fixture) file(t *testing.T, path, content string) string {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.cwd, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (f *fixture) call(t *testing.T, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return f.reg.Execute(context.Background(), tool.Invocation{CallID: "call-1", Name: name, Arguments: raw, Caller: caller("s1")})
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	f.file(t, "a.txt", "alpha\r\nbeta\ngamma")
	f.file(t, "big.txt", numbered(1, 5000))
	f.file(t, "bin.dat", "PK\x03\x04\x00\x00binary")
	f.file(t, "long.txt", strings.Repeat("é", MaxLineChars+10)+"\n")
	f.file(t, "empty.txt", "")
	if err := os.Mkdir(filepath.Join(f.cwd, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     map[string]any
		contains []string
		absent   []string
		code     string
		end      int
		more     bool
	}{
		{name: "whole small file", args: map[string]any{"path": "a.txt"},
			contains: []string{"     1\talpha\n", "     2\tbeta\n", "     3\tgamma\n"}, absent: []string{"\r", "continues"}, end: 3},
		{name: "window", args: map[string]any{"path": "a.txt", "offset": 2, "limit": 1},
			contains: []string{"     2\tbeta\n", "call read with offset=3"}, absent: []string{"alpha", "gamma"}, end: 2, more: true},
		{name: "huge file first page", args: map[string]any{"path": "big.txt"},
			contains: []string{"     1\tline 1\n", "  2000\tline 2000\n", "Showing lines 1-2000", "offset=2001"}, absent: []string{"line 2001\n"}, end: 2000, more: true},
		{name: "huge file last page", args: map[string]any{"path": "big.txt", "offset": 4001},
			contains: []string{"  4001\tline 4001\n", "  5000\tline 5000\n"}, absent: []string{"continues", "line 4000\n"}, end: 5000},
		{name: "past the end", args: map[string]any{"path": "big.txt", "offset": 6000},
			contains: []string{"shorter"}, end: 5999},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, contains: []string{"(empty file)"}},
		{name: "long line cut at a rune boundary", args: map[string]any{"path": "long.txt"},
			contains: []string{"line cut: 10 more characters"}, end: 1},
		{name: "absolute path inside", args: map[string]any{"path": filepath.Join(f.cwd, "a.txt")}, contains: []string{"alpha"}, end: 3},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, code: workspace.CodeBinaryFile},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, code: workspace.CodeFileNotFound},
		{name: "directory", args: map[string]any{"path": "dir"}, code: workspace.CodeNotRegularFile},
		{name: "empty path", args: map[string]any{"path": ""}, code: tool.CodeInvalidArgs},
		{name: "bad offset", args: map[string]any{"path": "a.txt", "offset": 0}, code: tool.CodeInvalidArgs},
		{name: "unknown argument", args: map[string]any{"path": "a.txt", "file_path": "a.txt"}, code: tool.CodeInvalidArgs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, ReadToolName, tt.args)
			if tt.code != "" {
				if !res.IsError || workspacetest.ErrCode(res) != tt.code {
					t.Fatalf("result %q code %q, want code %s", workspacetest.Text(res), workspacetest.ErrCode(res), tt.code)
				}
				return
			}
			if res.IsError {
				t.Fatalf("error result %q", workspacetest.Text(res))
			}
			for _, s := range tt.contains {
				if !strings.Contains(workspacetest.Text(res), s) {
					t.Errorf("output lacks %q:\n%.400s", s, workspacetest.Text(res))
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(workspacetest.Text(res), s) {
					t.Errorf("output has %q", s)
				}
			}
			out := res.Raw.(ReadOutput)
			if out.EndLine != tt.end || out.More != tt.more {
				t.Errorf("raw %+v, want end %d more %v", out, tt.end, tt.more)
			}
			if res.Display == nil || len(res.Display.Locations) != 1 || !filepath.IsAbs(res.Display.Locations[0].Path) {
				t.Errorf("display %+v: want one absolute location", res.Display)
			}
		})
	}
	// Every read passes the gate (rules may deny one), flagged inside the
	// cwd so that the gate allows it without asking.
	for _, r := range f.perms.Requests() {
		if r.OutsideCwd || r.Kind != workspace.KindRead || r.Subject == "" || filepath.IsAbs(r.Subject) {
			t.Fatalf("read inside the cwd passed the gate as %+v", r)
		}
	}
}

// Paging through a huge file with the hints shown visits every line once.
func TestReadPagesThroughHugeFile(t *testing.T) {
	f := newFixture(t)
	const lines = 12345
	f.file(t, "huge.txt", numbered(1, lines))
	offset, seen := 1, 0
	for range 20 {
		res := f.call(t, ReadToolName, map[string]any{"path": "huge.txt", "offset": offset, "limit": 5000})
		out := res.Raw.(ReadOutput)
		seen += out.EndLine - out.StartLine + 1
		if !out.More {
			break
		}
		want := fmt.Sprintf("offset=%d", out.EndLine+1)
		if !strings.Contains(workspacetest.Text(res), want) {
			t.Fatalf("page ending at %d lacks %q", out.EndLine, want)
		}
		offset = out.EndLine + 1
	}
	if seen != lines {
		t.Fatalf("saw %d lines, want %d", seen, lines)
	}
}

// escapes are paths that lead out of the cwd: through "..", as an
// absolute path, and through a symlink (to a file, and to a directory).
func escapes(t *testing.T, f *fixture, name, content string) map[string]string {
	t.Helper()
	target := f.file(t, filepath.Join(f.outside, name), content)
	if err := os.Symlink(target, filepath.Join(f.cwd, "link-"+name)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.cwd, "linkdir-"+name)); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(f.cwd, target)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"dotdot":      rel,
		"absolute":    target,
		"symlink":     "link-" + name,
		"symlink dir": filepath.Join("linkdir-"+name, name),
	}
}

func TestReadOutsideCwdAsks(t *testing.T) {
	f := newFixture(t)
	paths := escapes(t, f, "secret.txt", "classified-content\n")
	for _, allowed := range []bool{true, false} {
		for how, p := range paths {
			t.Run(fmt.Sprintf("%s allowed=%v", how, allowed), func(t *testing.T) {
				before := len(f.perms.Requests())
				f.perms.Decide = func(r workspace.PermissionRequest) error {
					if allowed {
						return nil
					}
					return local.Reject(r)
				}
				res := f.call(t, ReadToolName, map[string]any{"path": p})
				reqs := f.perms.Requests()
				if len(reqs) != before+1 {
					t.Fatalf("asked %d times, want once", len(reqs)-before)
				}
				req := reqs[len(reqs)-1]
				if !req.OutsideCwd || req.Kind != workspace.KindRead || req.Tool != ReadToolName || req.CallID != "call-1" {
					t.Fatalf("request %+v", req)
				}
				if allowed != !res.IsError || allowed != strings.Contains(workspacetest.Text(res), "classified-content") {
					t.Fatalf("allowed=%v: result %q", allowed, workspacetest.Text(res))
				}
				if !allowed && workspacetest.ErrCode(res) != workspace.CodePermissionRejected {
					t.Fatalf("code %q", workspacetest.ErrCode(res))
				}
			})
		}
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	existing := f.file(t, "old.txt", "before\n")
	res := f.call(t, WriteToolName, map[string]any{"path": "sub/new.txt", "content": "hello\nworld\n"})
	if res.IsError || readFile(t, filepath.Join(f.cwd, "sub/new.txt")) != "hello\nworld\n" {
		t.Fatalf("create: %q", workspacetest.Text(res))
	}
	d := res.Display.Diffs
	if len(d) != 1 || d[0].OldText != nil || d[0].NewText != "hello\nworld\n" || d[0].Path != filepath.Join(f.cwd, "sub/new.txt") {
		t.Fatalf("create diff %+v", d)
	}
	if !res.Raw.(WriteOutput).Created || !strings.Contains(workspacetest.Text(res), "Created sub/new.txt (2 lines)") {
		t.Fatalf("create result %q %+v", workspacetest.Text(res), res.Raw)
	}
	res = f.call(t, WriteToolName, map[string]any{"path": "old.txt", "content": "after\n"})
	if res.IsError || readFile(t, existing) != "after\n" {
		t.Fatalf("overwrite: %q", workspacetest.Text(res))
	}
	if d := res.Display.Diffs; len(d) != 1 || d[0].OldText == nil || *d[0].OldText != "before\n" || d[0].NewText != "after\n" {
		t.Fatalf("overwrite diff %+v", d)
	}
	reqs := f.perms.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d permission requests, want one per write", len(reqs))
	}
	for _, r := range reqs {
		if r.Kind != workspace.KindEdit || r.Tool != WriteToolName || r.OutsideCwd || r.Display == nil || len(r.Display.Diffs) != 1 {
			t.Fatalf("request %+v", r)
		}
	}
	res = f.call(t, WriteToolName, map[string]any{"path": "old.txt", "content": "after\n"})
	if res.IsError || !strings.Contains(workspacetest.Text(res), "nothing was written") || len(f.perms.Requests()) != 2 {
		t.Fatalf("unchanged: %q", workspacetest.Text(res))
	}
	bin := f.file(t, "bin.dat", "\x00\x01")
	res = f.call(t, WriteToolName, map[string]any{"path": "bin.dat", "content": "text"})
	if workspacetest.ErrCode(res) != workspace.CodeBinaryFile || readFile(t, bin) != "\x00\x01" {
		t.Fatalf("over binary: %q", workspacetest.Text(res))
	}
}

// A refused write or edit returns the gate's code and leaves the file as
// it was; a path outside the cwd is asked with OutsideCwd, never
// written silently.
func TestRefusedChangesTouchNothing(t *testing.T) {
	f := newFixture(t)
	paths := escapes(t, f, "target.txt", "original\n")
	paths["inside"] = "inside.txt"
	f.file(t, "inside.txt", "original\n")
	refusals := map[string]error{
		workspace.CodePermissionRejected:  &tool.Error{Code: workspace.CodePermissionRejected, Message: "rejected"},
		workspace.CodePermissionCancelled: &tool.Error{Code: workspace.CodePermissionCancelled, Message: "cancelled"},
		workspace.CodeModeForbids:         &tool.Error{Code: workspace.CodeModeForbids, Message: "plan mode"},
	}
	for how, p := range paths {
		for wantCode, refusal := range refusals {
			for _, call := range []struct {
				name string
				args map[string]any
			}{
				{WriteToolName, map[string]any{"path": p, "content": "changed\n"}},
				{EditToolName, map[string]any{"path": p, "old_string": "original", "new_string": "changed"}},
			} {
				t.Run(how+"/"+wantCode+"/"+call.name, func(t *testing.T) {
					before := len(f.perms.Requests())
					f.perms.Decide = func(workspace.PermissionRequest) error { return refusal }
					res := f.call(t, call.name, call.args)
					if !res.IsError || workspacetest.ErrCode(res) != wantCode {
						t.Fatalf("result %q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), wantCode)
					}
					abs := p
					if !filepath.IsAbs(abs) {
						abs = filepath.Join(f.cwd, p)
					}
					if got := readFile(t, abs); got != "original\n" {
						t.Fatalf("file changed to %q", got)
					}
					reqs := f.perms.Requests()
					if len(reqs) != before+1 {
						t.Fatalf("asked %d times", len(reqs)-before)
					}
					if r := reqs[len(reqs)-1]; r.OutsideCwd != (how != "inside") || r.Kind != workspace.KindEdit {
						t.Fatalf("request %+v", r)
					}
					// Inside, the diff is what was asked about; outside,
					// nothing of the file is shown before it is allowed.
					wantDiffs := map[bool]int{true: 1, false: 0}[how == "inside"]
					if res.Display == nil || len(res.Display.Diffs) != wantDiffs ||
						(wantDiffs == 1 && *res.Display.Diffs[0].OldText != "original\n") {
						t.Fatalf("refused call display: %+v", res.Display)
					}
				})
			}
		}
	}
}

func TestEdit(t *testing.T) {
	tests := []struct {
		name     string
		content  string
		args     map[string]any
		want     string
		code     string
		line     int
		contains string
	}{
		{name: "unique", content: "a\nfoo\nb\n", args: map[string]any{"old_string": "foo", "new_string": "bar"},
			want: "a\nbar\nb\n", line: 2, contains: "replaced 1 occurrence at line 2"},
		{name: "multi-line", content: "x\nfunc a() {\n\treturn 1\n}\n", args: map[string]any{"old_string": "\treturn 1\n}", "new_string": "\treturn 2\n}"},
			want: "x\nfunc a() {\n\treturn 2\n}\n", line: 3},
		{name: "delete", content: "keep\ndrop\n", args: map[string]any{"old_string": "drop\n", "new_string": ""}, want: "keep\n", line: 2},
		{name: "no match", content: "a\n", args: map[string]any{"old_string": "zzz", "new_string": "y"}, code: CodeEditNoMatch, contains: "f.txt: old_string was not found"},
		{name: "whitespace must match", content: "\tfoo\n", args: map[string]any{"old_string": "    foo", "new_string": "bar"}, code: CodeEditNoMatch},
		{name: "ambiguous", content: "foo\nfoo\nfoo\n", args: map[string]any{"old_string": "foo", "new_string": "bar"}, code: CodeEditAmbiguous, contains: "occurs 3 times"},
		{name: "replace all", content: "foo\nfoo\nfoo\n", args: map[string]any{"old_string": "foo", "new_string": "bar", "replace_all": true},
			want: "bar\nbar\nbar\n", line: 1, contains: "replaced 3 occurrences"},
		{name: "replace all with one match", content: "foo\n", args: map[string]any{"old_string": "foo", "new_string": "bar", "replace_all": true}, want: "bar\n", line: 1},
		{name: "crlf file", content: "a\r\nb\r\nc\r\n", args: map[string]any{"old_string": "a\nb", "new_string": "x\ny"}, want: "x\r\ny\r\nc\r\n", line: 1},
		{name: "empty old_string", content: "a", args: map[string]any{"old_string": "", "new_string": "b"}, code: tool.CodeInvalidArgs},
		{name: "same strings", content: "a", args: map[string]any{"old_string": "a", "new_string": "a"}, code: tool.CodeInvalidArgs},
		{name: "not utf-8", content: "caf\xe9 foo", args: map[string]any{"old_string": "foo", "new_string": "bar"}, code: workspace.CodeBinaryFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.file(t, "f.txt", tt.content)
			tt.args["path"] = "f.txt"
			res := f.call(t, EditToolName, tt.args)
			if tt.code != "" {
				if workspacetest.ErrCode(res) != tt.code {
					t.Fatalf("result %q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), tt.code)
				}
				if readFile(t, p) != tt.content {
					t.Fatal("a failed edit changed the file")
				}
				if len(f.perms.Requests()) != 0 {
					t.Fatal("a failed edit asked for permission")
				}
			} else {
				if res.IsError {
					t.Fatalf("error %q", workspacetest.Text(res))
				}
				if got := readFile(t, p); got != tt.want {
					t.Fatalf("file %q, want %q", got, tt.want)
				}
				d := res.Display
				if len(d.Diffs) != 1 || *d.Diffs[0].OldText != tt.content || d.Diffs[0].NewText != tt.want || d.Locations[0].Line != tt.line {
					t.Fatalf("display %+v", d)
				}
				if reqs := f.perms.Requests(); len(reqs) != 1 || reqs[0].Display.Diffs[0].NewText != tt.want {
					t.Fatalf("requests %+v", reqs)
				}
			}
			if !strings.Contains(workspacetest.Text(res), tt.contains) {
				t.Fatalf("result %q lacks %q", workspacetest.Text(res), tt.contains)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		f := newFixture(t)
		res := f.call(t, EditToolName, map[string]any{"path": "nope.go", "old_string": "a", "new_string": "b"})
		if workspacetest.ErrCode(res) != workspace.CodeFileNotFound {
			t.Fatalf("%q %q", workspacetest.Text(res), workspacetest.ErrCode(res))
		}
	})
}

func TestLocatorsAndKinds(t *testing.T) {
	tests := []struct {
		tool interface {
			tool.Tool
			tool.Kind
			tool.Locator
		}
		kind string
		args string
		want []session.ToolLocation
	}{
		{NewRead(nil), "read", `{"path":"a.go","offset":7}`, []session.ToolLocation{{Path: "a.go", Line: 7}}},
		{NewWrite(nil), "edit", `{"path":"/x/b.go","content":""}`, []session.ToolLocation{{Path: "/x/b.go"}}},
		{NewEdit(nil), "edit", `{"path":"c.go"}`, []session.ToolLocation{{Path: "c.go"}}},
		{NewEdit(nil), "edit", `not json`, nil},
		{NewRead(nil), "read", `{}`, nil},
	}
	for _, tt := range tests {
		if got := tt.tool.Kind(); got != tt.kind {
			t.Errorf("%s kind %q", tt.tool.Spec().Name, got)
		}
		got := tt.tool.Locations(json.RawMessage(tt.args))
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s locations(%s) = %v, want %v", tt.tool.Spec().Name, tt.args, got, tt.want)
		}
	}
}

func TestNoWorkspace(t *testing.T) {
	reg, err := tool.NewRegistry(Tools(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), tool.Invocation{Name: ReadToolName, Arguments: json.RawMessage(`{"path":"a"}`), Caller: caller("s")})
	if workspacetest.ErrCode(res) != workspace.CodeNoWorkspace {
		t.Fatalf("%q", workspacetest.Text(res))
	}
}
