package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// seedCatalog writes a parent with a continuable child (which has a
// grandchild) and a descriptor-less settled child, through the real
// persistence store.
func seedCatalog(t *testing.T, dir string) {
	t.Helper()
	p, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(&session.DeterministicSources{})
	detach := p.Attach(st)
	create := func(h session.Header, descriptor *subagent.Descriptor) {
		s, err := st.Create(h, session.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Append(session.TypeTurnStart, session.TurnData{Turn: 1})
		if descriptor != nil {
			s.Append(session.TypeDescriptor, descriptor)
		}
		s.Append(session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})
		if err := st.Remove(s.ID()); err != nil {
			t.Fatal(err)
		}
	}
	create(session.Header{ID: "parent", CreatedAt: 1, Cwd: "/w"}, nil)
	create(session.Header{ID: "child-a", CreatedAt: 2, Cwd: "/w", ParentSession: "parent", Origin: "subagent", DelegationDepth: 1},
		&subagent.Descriptor{Version: 2, Mode: subagent.ModeContinuable, Provider: "spawn", Label: "review the patch"})
	create(session.Header{ID: "grandchild", CreatedAt: 3, Cwd: "/w", ParentSession: "child-a", Origin: "subagent", DelegationDepth: 2},
		&subagent.Descriptor{Version: 2, Mode: subagent.ModeOneShot, Provider: "spawn"})
	create(session.Header{ID: "child-b", CreatedAt: 4, Cwd: "/w", ParentSession: "parent", Origin: "subagent", DelegationDepth: 1}, nil)
	detach()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAgentsCommandPrintsCatalogTree(t *testing.T) {
	dir := t.TempDir()
	seedCatalog(t, dir)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"agents", "--data-dir", dir, "parent"}, "parent\n" +
			"  └─ child-a [continuable, inactive, has children] — review the patch\n" +
			"  └─ child-b [diagnostic: corrupt]\n"},
		{[]string{"agents", "--data-dir", dir, "parent", "--descendants"}, "parent\n" +
			"  └─ child-a [continuable, inactive, has children] — review the patch\n" +
			"    └─ grandchild [one-shot, inactive]\n" +
			"  └─ child-b [diagnostic: corrupt]\n"},
		// An unknown id is "session not found" (dataerrors_test.go).
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[3:], " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb, func(string) string { return "" })
			if code != ExitOK {
				t.Fatalf("exit %d, stderr %s", code, errb.String())
			}
			if out.String() != tt.want {
				t.Fatalf("output\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
	var out, errb bytes.Buffer
	// An unknown session is not found (exit 1), not an empty tree.
	if code := Main(context.Background(), []string{"agents", "--data-dir", dir, "nobody"}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != ExitError ||
		out.Len() != 0 || !strings.Contains(errb.String(), "session not found: nobody") {
		t.Fatalf("unknown session: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if code := Main(context.Background(), []string{"agents", "--data-dir", dir, "../etc"}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != ExitUsage {
		t.Fatalf("hostile id: exit %d, want %d", code, ExitUsage)
	}
}

func TestSubagentsListExtension(t *testing.T) {
	dir := t.TempDir()
	seedCatalog(t, dir)
	a := newTestApp(t, dir, "model:\n  main:\n    - text: hi\n")
	defer a.Close()
	ext := a.Extensions[acp.SubagentsListMethod]
	if ext == nil {
		t.Fatal("extension not registered")
	}
	got, err := ext(t.Context(), json.RawMessage(`{"sessionId":"parent","scope":"descendants"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"entries":[` +
		`{"kind":"child","id":"child-a","mode":"continuable","label":"review the patch","activity":"inactive","hasChildren":true,"parentId":"parent","depth":1},` +
		`{"kind":"child","id":"grandchild","mode":"one-shot","activity":"inactive","hasChildren":false,"parentId":"child-a","depth":2},` +
		`{"kind":"diagnostic","id":"child-b","reason":"corrupt","parentId":"parent","depth":1}]}`
	if string(b) != want {
		t.Fatalf("extension result\n%s\nwant\n%s", b, want)
	}
	for _, bad := range []string{`{"sessionId":"../x"}`, `{"sessionId":"parent","scope":"all"}`, `[]`} {
		if _, err := ext(t.Context(), json.RawMessage(bad)); err == nil {
			t.Errorf("params %s: want an error", bad)
		}
	}
}

// TestAgentsCommandReadsNoChildLog: over a valid catalog index, `agents`
// lists every child without opening a child's log. Each child log is
// overwritten with garbage of the same size and modification time (the
// index's witness still holds): the tree must not change, in either
// mode. With the index deleted the logs are read, and the garbage shows.
func TestAgentsCommandReadsNoChildLog(t *testing.T) {
	dir := t.TempDir()
	const n = 50
	writeChildren(t, dir, n)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(context.Background(), append([]string{"--data-dir", dir, "agents"}, args...), strings.NewReader(""), &out, &errb, noEnv); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	want := run("parent") // builds the index
	if strings.Count(want, "[continuable, inactive] — bench child") != n {
		t.Fatalf("first listing:\n%s", want)
	}
	for i := range n {
		p := filepath.Join(dir, "sessions", fmt.Sprintf("child-%05d.jsonl", i))
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		garbage := append(bytes.Repeat([]byte("x"), int(st.Size())-1), '\n')
		if err := os.WriteFile(p, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"parent"}, {"--descendants", "parent"}} {
		if got := run(args...); got != want {
			t.Fatalf("agents %v read a child log:\n%s\nwant\n%s", args, got, want)
		}
	}
	if err := os.Remove(filepath.Join(dir, "projections", projcache.IndexFile)); err != nil {
		t.Fatal(err)
	}
	if got := run("parent"); !strings.Contains(got, "[diagnostic: unavailable") {
		t.Fatalf("without the index the garbage logs went unseen:\n%s", got)
	}
}
