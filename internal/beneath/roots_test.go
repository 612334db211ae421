package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadsStayBeneathTheAnchor(t *testing.T) {
	base := t.TempDir()
	anchor := filepath.Join(base, "repo")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(anchor, "a", "b"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(anchor, "a", "b", "in.md"), "inside")
	write(filepath.Join(outside, "secret.md"), "secret")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "secret.md"), filepath.Join(anchor, "a", "b", "abs.md"))
	link("../../../outside/secret.md", filepath.Join(anchor, "a", "b", "rel.md"))
	link("in.md", filepath.Join(anchor, "a", "b", "ok.md"))
	link(outside, filepath.Join(anchor, "a", "linkdir"))

	r := NewRoots()
	defer r.Close()
	dir := filepath.Join(anchor, "a", "b")
	entries, err := r.ReadDir(anchor, dir)
	if err != nil || len(entries) != 4 || entries[0].Name() != "abs.md" {
		t.Fatalf("ReadDir = %v, %v", entries, err)
	}
	tests := []struct {
		path string
		want string // "" = refused
	}{
		{filepath.Join(dir, "in.md"), "inside"},
		{filepath.Join(dir, "ok.md"), "inside"},
		{filepath.Join(dir, "abs.md"), ""},
		{filepath.Join(dir, "rel.md"), ""},
		{filepath.Join(anchor, "a", "linkdir", "secret.md"), ""},
		{filepath.Join(outside, "secret.md"), ""},
	}
	for _, tt := range tests {
		got, err := r.ReadFile(anchor, tt.path, 1<<10, nil)
		if tt.want == "" {
			if err == nil {
				t.Errorf("%s: read %q through a path leaving the anchor", tt.path, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	if _, err := r.ReadDir(anchor, filepath.Join(anchor, "a", "linkdir")); err == nil {
		t.Error("listed a directory symlinked out of the anchor")
	}
	_, err = r.ReadFile(anchor, filepath.Join(dir, "in.md"), 3, nil)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 3 {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := r.ReadFile(anchor, dir, 10, nil); err == nil {
		t.Error("read a directory as a file")
	}
	// Without an anchor (the person's own folders) links are followed.
	if got, err := r.ReadFile(Anywhere, filepath.Join(dir, "abs.md"), 1<<10, nil); err != nil || string(got) != "secret" {
		t.Errorf("Anywhere: %q, %v", got, err)
	}
	if e, err := r.ReadDir(Anywhere, filepath.Join(anchor, "a", "linkdir")); err != nil || len(e) != 1 {
		t.Errorf("Anywhere ReadDir: %v, %v", e, err)
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct {
		path    string
		anchors []string
		want    string
	}{
		{"/home/u/.claude/agents", []string{"/home/u"}, "/home/u"},
		{"/xdg/acp-agent/agents", []string{"/home/u"}, "/xdg/acp-agent/agents"},
		{"/home/uu/x", []string{"/home/u"}, "/home/uu/x"},
		{"/home/u/x", []string{"", "/home/u"}, "/home/u"},
	}
	for _, tt := range tests {
		if got := Anchor(tt.path, tt.anchors...); got != tt.want {
			t.Errorf("Anchor(%s, %v) = %s; want %s", tt.path, tt.anchors, got, tt.want)
		}
	}
}
