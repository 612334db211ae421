package app

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/driver/external"
	"github.com/acp-agent/acp-agent/subagent"
)

// allowAll is a permission gate that allows everything.
type allowAll struct{}

func (allowAll) Authorize(context.Context, workspace.PermissionRequest) error { return nil }

// The driver's fake ACP agent drives external children whose listing rows
// are read back through the catalog: the children one announced are nested
// rows under it, one that crashed shows the cause, and one whose agent
// cannot load sessions shows "cannot resume".
func TestExternalChildrenListedFromTheFakeAgent(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fakeagent")
	if out, err := exec.Command("go", "build", "-o", bin, "../driver/external/testdata/fakeagent").CombinedOutput(); err != nil {
		t.Fatalf("build fakeagent: %v\n%s", err, out)
	}
	dir := t.TempDir()
	store := session.NewStore(&session.DeterministicSources{})
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Attach(store))
	if _, err := store.Create(session.Header{ID: "parent", Cwd: dir}, session.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(subagent.AgentDefinition{Name: "fake", Hash: "h", File: "fake.md", Format: "ours", Scope: "user",
		External: &subagent.ExternalCommand{Command: bin}})
	run := func(id, label string, env map[string]string) {
		t.Helper()
		desc, _ := json.Marshal(map[string]any{"version": 2, "mode": "continuable", "provider": subagent.ExternalProvider, "label": label})
		s, err := store.Create(session.Header{ID: id, Cwd: dir, ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1},
			session.CreateOptions{Seed: []session.Event{
				{Type: session.TypeDescriptor, Seq: 0, Data: desc},
				{Type: subagent.TypeDefinition, Seq: 1, Data: def, Ignorable: true},
			}})
		if err != nil {
			t.Fatal(err)
		}
		env["PATH"] = os.Getenv("PATH")
		child := external.New(s, external.Command{Name: "fake", Command: bin, Env: []string{"FAKE_MODE", "FAKE_NOLOAD"}}, external.Options{
			Workspace: workspace.Static{Cwd: dir, Files: local.Files{}, Commands: local.Commands{}, Permissions: allowAll{}},
			Getenv:    func(k string) string { return env[k] }, InitTimeout: 5 * time.Second, ReplyTimeout: 5 * time.Second,
		})
		tools, err := tool.NewRegistry(child.Tool())
		if err != nil {
			t.Fatal(err)
		}
		a := agent.New(s, agent.Options{Model: child, Tools: tools, MaxSteps: 100, OnClose: child.Close})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := a.Prompt(ctx, session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("go")}}); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run("ext-nested", "Nester", map[string]string{"FAKE_MODE": "nested"})
	run("ext-crash", "Crasher", map[string]string{"FAKE_MODE": "crash"})
	run("ext-noload", "Noload", map[string]string{"FAKE_MODE": "normal", "FAKE_NOLOAD": "1"})

	cat := &subagent.Catalog{Sessions: store, Projections: reg}
	rows, err := cat.ListDescendants(context.Background(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteTree(context.Background(), &b, "parent", rows, nil); err != nil {
		t.Fatal(err)
	}
	tree := b.String()
	for _, want := range []string{
		"└─ ext-nested [continuable, running] — Nester\n    └─ nested-7 [nested, inactive] — Scout — announced by its parent's agent: idle\n",
		"└─ ext-crash [continuable, running] — Crasher — failed: external agent fake exited (exit status 3)",
		"└─ ext-noload [continuable, running] — Noload — " + subagent.CannotResumeText + "\n",
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("the tree has no %q:\n%s", want, tree)
		}
	}
	nested, err := cat.ListChildren(context.Background(), "ext-nested")
	if err != nil || len(nested) != 1 || nested[0].ID != "nested-7" || nested[0].Mode != subagent.ModeNested || nested[0].Label != "Scout" {
		t.Fatalf("children of the external child: %+v, %v", nested, err)
	}
}
