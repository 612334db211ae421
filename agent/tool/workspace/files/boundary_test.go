package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// countingFiles is local.Files that counts every access by path.
type countingFiles struct {
	local.Files
	mu     sync.Mutex
	access map[string]int
}

func (c *countingFiles) touched(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.access == nil {
		c.access = map[string]int{}
	}
	c.access[p]++
}

func (c *countingFiles) count(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.access[p]
}

func (c *countingFiles) ReadTextFile(ctx context.Context, p string, line, limit int) (string, error) {
	c.touched(p)
	return c.Files.ReadTextFile(ctx, p, line, limit)
}

func (c *countingFiles) ReadChecked(ctx context.Context, p workspace.Path, line, limit int) (string, error) {
	c.touched(p.Abs)
	return c.Files.ReadChecked(ctx, p, line, limit)
}

func (c *countingFiles) WriteChecked(ctx context.Context, p workspace.Path, content string) error {
	c.touched(p.Abs)
	return c.Files.WriteChecked(ctx, p, content)
}

func newCountingFixture(t *testing.T) (*fixture, *countingFiles) {
	t.Helper()
	f := &fixture{cwd: t.TempDir(), outside: t.TempDir(), perms: &local.Scripted{}}
	files := &countingFiles{}
	reg, err := tool.NewRegistry(Tools(workspace.Static{Cwd: f.cwd, Files: files, Permissions: f.perms})...)
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	return f, files
}

// A refused change to an outside path answers the same whatever the file
// holds (no EDIT_NO_MATCH / "occurs N times" / "already has this content"
// oracle), reads nothing, and shows no diff.
func TestOutsideRefusalRevealsNothing(t *testing.T) {
	contents := map[string]*string{
		"match": ptr("needle\n"), "twice": ptr("needle needle\n"), "no match": ptr("other\n"),
		"same content": ptr("new\n"), "binary": ptr("\x00needle"), "missing": nil,
	}
	refusals := map[string]func(workspace.PermissionRequest) error{
		"rejected": local.Reject,
		"plan": func(workspace.PermissionRequest) error {
			return &tool.Error{Code: workspace.CodeModeForbids, Message: "plan mode"}
		},
	}
	calls := map[string]map[string]any{
		"edit":             {"old_string": "needle", "new_string": "x"},
		"edit replace_all": {"old_string": "needle", "new_string": "x", "replace_all": true},
		"write":            {"content": "new\n"},
	}
	for rname, refuse := range refusals {
		for cname, args := range calls {
			t.Run(rname+"/"+cname, func(t *testing.T) {
				f, files := newCountingFixture(t)
				target := filepath.Join(f.outside, "secret.txt")
				f.perms.Decide = refuse
				seen := map[string]string{}
				for what, content := range contents {
					os.Remove(target)
					if content != nil {
						f.file(t, target, *content)
					}
					args["path"] = target
					tool := EditToolName
					if cname == "write" {
						tool = WriteToolName
					}
					res := f.call(t, tool, args)
					d, _ := json.Marshal(res.Display)
					seen[what] = workspacetest.ErrCode(res) + "|" + workspacetest.Text(res) + "|" + string(d)
					if strings.Contains(string(d), "diffs") {
						t.Fatalf("%s: refused outside call shows a diff: %s", what, d)
					}
				}
				if n := files.count(target); n != 0 {
					t.Fatalf("the outside file was accessed %d times before any allow", n)
				}
				first := seen["missing"]
				for what, s := range seen {
					if s != first {
						t.Fatalf("answer depends on the content:\n%s: %s\nmissing: %s", what, s, first)
					}
				}
				for _, r := range f.perms.Requests() {
					if !r.OutsideCwd || strings.Contains(r.Title, "Create") || (r.Display != nil && len(r.Display.Diffs) != 0) {
						t.Fatalf("request %+v", r)
					}
				}
			})
		}
	}
}

func ptr(s string) *string { return &s }

// The path is swapped for a symlink (or a hard link) to an outside file
// while the question about the inside file is pending; allowing it
// writes nothing outside.
func TestSwapWhileQuestionPending(t *testing.T) {
	swaps := map[string]func(target, inside string) error{
		"symlink":     os.Symlink,
		"hard link":   os.Link,
		"symlink dir": nil, // the parent directory becomes a symlink
	}
	for how, swap := range swaps {
		for _, call := range []string{WriteToolName, EditToolName} {
			t.Run(how+"/"+call, func(t *testing.T) {
				f := newFixture(t)
				target := f.file(t, filepath.Join(f.outside, "sub", "f.txt"), "original\n")
				inside := f.file(t, "sub/f.txt", "original\n")
				f.perms.Decide = func(workspace.PermissionRequest) error {
					var err error
					if swap == nil {
						if err = os.RemoveAll(filepath.Dir(inside)); err == nil {
							err = os.Symlink(filepath.Dir(target), filepath.Dir(inside))
						}
					} else if err = os.Remove(inside); err == nil {
						err = swap(target, inside)
					}
					if err != nil {
						t.Errorf("swap: %v", err)
					}
					return nil // allow once
				}
				args := map[string]any{"path": "sub/f.txt", "content": "changed\n"}
				if call == EditToolName {
					args = map[string]any{"path": "sub/f.txt", "old_string": "original", "new_string": "changed"}
				}
				res := f.call(t, call, args)
				if got := readFile(t, target); got != "original\n" {
					t.Fatalf("outside file written: %q (result %q)", got, workspacetest.Text(res))
				}
				if workspacetest.ErrCode(res) != workspace.CodePathChanged {
					t.Fatalf("result %q code %q, want %s", workspacetest.Text(res), workspacetest.ErrCode(res), workspace.CodePathChanged)
				}
			})
		}
	}
}

// acceptEdits allows changes inside the cwd and refuses anything outside,
// as the gate does in accept-edits mode when the person says no.
func acceptEdits(r workspace.PermissionRequest) error {
	if r.OutsideCwd {
		return local.Reject(r)
	}
	return nil
}

// A process swaps the file between a regular file and a symlink to an
// outside file while 500 edits and writes run: nothing is written outside.
func TestConcurrentSwapperWritesNothingOutside(t *testing.T) {
	f := newFixture(t)
	f.perms.Decide = acceptEdits
	target := f.file(t, filepath.Join(f.outside, "t.txt"), "x original\n")
	inside := filepath.Join(f.cwd, "t.txt")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmpLink, tmpFile := filepath.Join(f.cwd, ".l"), filepath.Join(f.cwd, ".f")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				os.Remove(tmpLink)
				if err = os.Symlink(target, tmpLink); err == nil {
					err = os.Rename(tmpLink, inside)
				}
			} else if err = os.WriteFile(tmpFile, []byte("x inside\n"), 0o644); err == nil {
				err = os.Rename(tmpFile, inside)
			}
			if err != nil {
				t.Errorf("swap: %v", err)
				return
			}
		}
	}()
	written := 0
	for i := range 500 {
		var res tool.Result
		if i%2 == 0 {
			res = f.call(t, WriteToolName, map[string]any{"path": "t.txt", "content": fmt.Sprintf("x written %d\n", i)})
		} else {
			res = f.call(t, EditToolName, map[string]any{"path": "t.txt", "old_string": "x", "new_string": "x edited"})
		}
		if !res.IsError {
			written++
		}
	}
	close(stop)
	wg.Wait()
	if got := readFile(t, target); got != "x original\n" {
		t.Fatalf("outside file written: %q", got)
	}
	t.Logf("%d of 500 changes landed inside", written)
}

// A hard link inside the cwd to an outside file counts as outside: read
// and changes ask (and say why), a refusal touches and shows nothing, and
// grep skips it.
func TestHardLinkCountsAsOutside(t *testing.T) {
	f := newFixture(t)
	target := f.file(t, filepath.Join(f.outside, "secret.txt"), "classified\n")
	link := filepath.Join(f.cwd, "innocent.txt")
	if err := os.Link(target, link); err != nil {
		t.Skipf("hard links across the temp dirs: %v", err)
	}
	f.perms.Decide = acceptEdits
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{ReadToolName, map[string]any{"path": "innocent.txt"}},
		{WriteToolName, map[string]any{"path": "innocent.txt", "content": "changed\n"}},
		{EditToolName, map[string]any{"path": "innocent.txt", "old_string": "classified", "new_string": "changed"}},
	} {
		before := len(f.perms.Requests())
		res := f.call(t, c.tool, c.args)
		reqs := f.perms.Requests()
		if len(reqs) != before+1 || !reqs[len(reqs)-1].OutsideCwd || !strings.Contains(reqs[len(reqs)-1].Title, "hard link") {
			t.Fatalf("%s: requests %+v", c.tool, reqs[before:])
		}
		if workspacetest.ErrCode(res) != workspace.CodePermissionRejected || strings.Contains(workspacetest.Text(res), "classified") {
			t.Fatalf("%s: result %q", c.tool, workspacetest.Text(res))
		}
	}
	if got := readFile(t, target); got != "classified\n" {
		t.Fatalf("outside file changed: %q", got)
	}
	// Allowed, the change is made (the person saw the reason).
	f.perms.Decide = nil
	if res := f.call(t, EditToolName, map[string]any{"path": "innocent.txt", "old_string": "classified", "new_string": "allowed"}); res.IsError {
		t.Fatalf("allowed edit: %q", workspacetest.Text(res))
	}
	if got := readFile(t, target); got != "allowed\n" {
		t.Fatalf("allowed edit did not land: %q", got)
	}
}
