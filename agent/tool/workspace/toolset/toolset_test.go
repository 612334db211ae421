package toolset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type caller = workspacetest.Caller

func TestToolsRegisterWithKinds(t *testing.T) {
	reg, err := tool.NewRegistry(Tools(nil)...)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(Names)
	slices.Sort(want)
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	kinds := map[string]string{"read": "read", "write": "edit", "edit": "edit", "glob": "search", "grep": "search", "bash": "execute"}
	for _, name := range Names {
		tl, _ := reg.Get(name)
		k, ok := tl.(tool.Kind)
		if !ok || k.Kind() != kinds[name] {
			t.Errorf("%s: kind %v", name, k)
		}
		_, locates := tl.(tool.Locator)
		if locates != (name != "bash") {
			t.Errorf("%s: Locator %v", name, locates)
		}
		if ReadOnly(name) != (kinds[name] == "read" || kinds[name] == "search") {
			t.Errorf("%s: ReadOnly %v", name, ReadOnly(name))
		}
		if d := tl.Spec().Description; len(d) < 100 {
			t.Errorf("%s: description too short for a model: %q", name, d)
		}
	}
}

// The tools work together on one session, each resolving it by the
// caller's session id: the resolver sees every call.
func TestToolsTogether(t *testing.T) {
	cwd := t.TempDir()
	r := &countingResolver{env: workspace.Env{Cwd: cwd, Files: local.Files{}, Commands: local.Commands{KillGrace: 100 * time.Millisecond}, Permissions: local.AllowAll{}}}
	reg, err := tool.NewRegistry(Tools(r)...)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string) string {
		t.Helper()
		res := reg.Execute(context.Background(), tool.Invocation{Name: name, Arguments: json.RawMessage(args), Caller: caller("sess-7")})
		if res.IsError {
			t.Fatalf("%s %s: %s", name, args, session.JoinText(res.Content, ""))
		}
		return session.JoinText(res.Content, "")
	}
	call("write", `{"path":"pkg/a.txt","content":"one\ntwo\n"}`)
	call("edit", `{"path":"pkg/a.txt","old_string":"two","new_string":"three"}`)
	if got := call("read", `{"path":"pkg/a.txt"}`); !strings.Contains(got, "     2\tthree") {
		t.Fatalf("read %q", got)
	}
	if got := call("glob", `{"pattern":"**/*.txt"}`); got != "pkg/a.txt" {
		t.Fatalf("glob %q", got)
	}
	if got := call("grep", `{"pattern":"thr+ee"}`); !strings.Contains(got, "pkg/a.txt:2:three") {
		t.Fatalf("grep %q", got)
	}
	if got := call("bash", `{"command":"cat pkg/a.txt"}`); got != "one\nthree\n[Exit code 0]" {
		t.Fatalf("bash %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "pkg/a.txt")); string(b) != "one\nthree\n" {
		t.Fatalf("file %q", b)
	}
	if r.calls != 6 || r.last != "sess-7" {
		t.Fatalf("resolver: %d calls, last %q", r.calls, r.last)
	}
}

type countingResolver struct {
	env   workspace.Env
	calls int
	last  string
}

func (c *countingResolver) Env(_ context.Context, id string) (workspace.Env, error) {
	c.calls++
	c.last = id
	return c.env, nil
}
