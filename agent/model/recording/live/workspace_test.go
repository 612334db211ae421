package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// fakeGate allows every request but those whose subject it refuses, and
// counts the questions.
type fakeGate struct {
	refuse map[string]bool
	asked  int
}

func (g *fakeGate) Authorize(_ context.Context, req workspace.PermissionRequest) error {
	g.asked++
	if g.refuse[req.Subject] {
		return errors.New("refused")
	}
	return nil
}

// The gate tap copies a file only after the real gate allowed a file
// tool's call on it, by the path the call resolved to: a refused call, a
// command, a search, a path outside the cwd (by name or once resolved)
// copy nothing; a secret-looking file gets a placeholder; the first touch
// of a path is the one kept.
func TestGateTapSnapshotsOnlyAllowedFileCalls(t *testing.T) {
	cwd := t.TempDir()
	for name, body := range map[string]string{"notes.txt": "v1\n", "denied.txt": "no\n", "cmd.txt": "c\n", "grep.txt": "g\n", ".env": "KEY=1\n"} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewExec(filepath.Join(t.TempDir(), "rec"), cwd)
	if err != nil {
		t.Fatal(err)
	}
	r.WrapModel(nil, nil) // starts the recording
	gate := &fakeGate{refuse: map[string]bool{"denied.txt": true}}
	tap := &gateTap{inner: gate, r: r, session: "s", cwd: cwd}
	ctx := context.Background()
	file := func(tool, rel string) workspace.PermissionRequest {
		return workspace.PermissionRequest{Tool: tool, Kind: workspace.KindEdit, Subject: rel, Resolved: rel}
	}
	steps := []struct {
		req     workspace.PermissionRequest
		refused bool
	}{
		{file("read", "notes.txt"), false},
		{file("edit", "denied.txt"), true},
		{workspace.PermissionRequest{Tool: "bash", Kind: workspace.KindExecute, Subject: "cat cmd.txt"}, false},
		{file("grep", "grep.txt"), false},
		{workspace.PermissionRequest{Tool: "read", Kind: workspace.KindRead, Subject: "/etc/hostname", Resolved: "/etc/hostname", OutsideCwd: true}, false},
		{workspace.PermissionRequest{Tool: "read", Kind: workspace.KindRead, Subject: "linked.txt", Resolved: "/elsewhere/linked.txt", OutsideCwd: true}, false},
		{file("write", ".env"), false},
	}
	for _, st := range steps {
		err := tap.Authorize(ctx, st.req)
		if (err != nil) != st.refused {
			t.Fatalf("%s %s: %v, refused want %v", st.req.Tool, st.req.Subject, err, st.refused)
		}
	}
	// The file changes after the first touch: the snapshot keeps the
	// state before it.
	if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("v2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tap.Authorize(ctx, file("edit", "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if gate.asked != len(steps)+1 {
		t.Fatalf("the real gate was asked %d times, want every request (%d)", gate.asked, len(steps)+1)
	}
	files := r.rec.Files()
	if files["notes.txt"] != "v1\n" {
		t.Errorf("notes.txt snapshot %q, want the state before the first touch", files["notes.txt"])
	}
	for _, not := range []string{"denied.txt", "cmd.txt", "grep.txt", "/etc/hostname", "hostname", "linked.txt"} {
		if _, ok := files[not]; ok {
			t.Errorf("%s was copied", not)
		}
	}
	if v, ok := files[".env"]; ok && strings.Contains(v, "KEY=1") {
		t.Errorf(".env was copied: %q", v)
	}
	notes := strings.Join(r.rec.Notes(), "\n")
	for _, want := range []string{"linked.txt: resolves outside the working directory", ".env"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// The tap keeps the real gate's read filter for the search tools.
func TestGateTapKeepsTheReadFilter(t *testing.T) {
	r, err := NewExec(filepath.Join(t.TempDir(), "rec"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.WrapModel(nil, nil)
	tap := &gateTap{inner: denyingGate{}, r: r, session: "s"}
	if !tap.ReadDenied("grep", "search", "secret.txt") || tap.ReadDenied("grep", "search", "plain.txt") {
		t.Fatal("the tap does not pass the gate's read filter on")
	}
}

// denyingGate denies reads of secret.txt through its read filter.
type denyingGate struct{}

func (denyingGate) Authorize(context.Context, workspace.PermissionRequest) error { return nil }
func (denyingGate) ReadDenied(_, _, name string) bool                            { return name == "secret.txt" }
