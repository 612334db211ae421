package settings

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// linkFixture makes files (name → content) under a fresh directory and
// hard links (link → target, both relative to it), and returns the
// directory (symlinks resolved).
func linkFixture(t testing.TB, files map[string]string, links map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range links {
		p := filepath.Join(dir, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(dir, target), p); err != nil {
			t.Skipf("no hard links here: %v", err)
		}
	}
	return dir
}

// denyPolicy is a policy whose user file denies rules.
func denyPolicy(t testing.TB, cwd string, rules ...string) *Policy {
	t.Helper()
	user := filepath.Join(t.TempDir(), "settings.json")
	data, _ := json.Marshal(map[string]any{"permissions": map[string]any{"deny": rules}})
	if err := os.WriteFile(user, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Load(user, cwd)
	if len(p.Problems()) > 0 {
		t.Fatal(p.Problems())
	}
	return p
}

// countReadDir counts the directories the wildcard search reads.
func countReadDir(t testing.TB) *int {
	n := new(int)
	readDir = func(name string) ([]os.DirEntry, error) { *n++; return os.ReadDir(name) }
	t.Cleanup(func() { readDir = os.ReadDir })
	return n
}

// TestWildcardDenyRuleCoversAHardLink: a deny rule with wildcards covers
// a file with several hard links when it names one of the file's other
// names (same device and inode) within the bases, found by a bounded
// search; where the bound is hit the call is refused (Cut); a file with
// one link is never searched for.
func TestWildcardDenyRuleCoversAHardLink(t *testing.T) {
	files := map[string]string{
		".env.local":           "SECRET=1\n",
		"deep/down/below/.env": "SECRET=2\n",
		"secrets/key.pem":      "KEY\n",
		"secrets/old/key.pem":  "OLD KEY\n",
		"plain.txt":            "hello\n",
		"single.txt":           "one link\n",
		"wt/config/prod.yml":   "db: child\n",
	}
	links := map[string]string{
		"notes.txt":          ".env.local",
		"sub/env-copy":       "deep/down/below/.env",
		"k.txt":              "secrets/key.pem",
		"old.txt":            "secrets/old/key.pem",
		"other.txt":          "plain.txt",
		"wt/notes/prod.txt":  "wt/config/prod.yml",
		"deep/plain-too.txt": "plain.txt",
	}
	dir := linkFixture(t, files, links)
	root := []string{dir}
	tests := []struct {
		name       string
		rules      []string
		tool, kind string
		path       string
		bases      []string
		max        int
		want       string // the denying rule, "" for none
		cut        bool
		reads      bool // directories were read
	}{
		{"last-name wildcard", []string{"read(.env*)"}, "read", "read", "notes.txt", root, 1000, "read(.env*)", false, true},
		{"double star", []string{"read(**/.env)"}, "read", "read", "sub/env-copy", root, 1000, "read(**/.env)", false, true},
		{"folder wildcard", []string{"read(secrets/*)"}, "read", "read", "k.txt", root, 1000, "read(secrets/*)", false, true},
		{"folder wildcard is one level", []string{"read(secrets/*)"}, "read", "read", "old.txt", root, 1000, "", false, true},
		{"double star under a folder", []string{"read(secrets/**)"}, "read", "read", "old.txt", root, 1000, "read(secrets/**)", false, true},
		{"absolute pattern", []string{"read(" + dir + "/secrets/*.pem)"}, "read", "read", "k.txt", root, 1000, "read(" + dir + "/secrets/*.pem)", false, true},
		{"kind rule covers a search", []string{"read(.env*)"}, "grep", "search", "notes.txt", root, 1000, "read(.env*)", false, true},
		{"the link of the denied name itself", []string{"read(.env*)"}, "read", "read", ".env.local", root, 1000, "read(.env*)", false, true},
		{"link to a file no rule names", []string{"read(.env*)", "read(**/.env)", "read(secrets/*)"}, "read", "read", "other.txt", root, 1000, "", false, true},
		{"another tool's rule: never searched", []string{"edit(.env*)"}, "read", "read", "notes.txt", root, 1000, "", false, false},
		{"one link: never searched", []string{"read(.env*)", "read(**/.env)", "read(secrets/*)"}, "read", "read", "single.txt", root, 1000, "", false, false},
		{"plain-path rules only", []string{"read(.env*)"}, "read", "read", "notes.txt", root, 0, "", false, false},
		{"a child's own cwd as a base", []string{"read(config/*.yml)"}, "read", "read", "wt/notes/prod.txt", []string{dir, filepath.Join(dir, "wt")}, 1000, "read(config/*.yml)", false, true},
		{"bound hit: refused", []string{"read(**/.env)"}, "read", "read", "other.txt", root, 3, "read(**/.env)", true, true},
		{"plain path under the child's base", []string{"read(config/prod.yml)"}, "read", "read", "wt/notes/prod.txt", []string{dir, filepath.Join(dir, "wt")}, 0, "read(config/prod.yml)", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := denyPolicy(t, dir, tc.rules...)
			reads := countReadDir(t)
			d, ok := p.DeniedByAnotherName(OtherNames{Tool: tc.tool, Kind: tc.kind, Bases: tc.bases, MaxEntries: tc.max}, filepath.Join(dir, tc.path))
			if ok != (tc.want != "") || d.Rule != tc.want || d.Cut != tc.cut {
				t.Errorf("got %+v, %v; want rule %q cut %v", d, ok, tc.want, tc.cut)
			}
			if (*reads > 0) != tc.reads {
				t.Errorf("%d directories read, want reads=%v", *reads, tc.reads)
			}
		})
	}
}

// TestWildcardSearchStaysInItsFolders: a rule with literal leading
// folders reads those only, as deep as the pattern goes.
func TestWildcardSearchStaysInItsFolders(t *testing.T) {
	files := map[string]string{"secrets/a.pem": "A\n", "plain.txt": "x\n"}
	for i := range 50 {
		files[fmt.Sprintf("big/%02d/f.txt", i)] = "y\n"
	}
	dir := linkFixture(t, files, map[string]string{"link.txt": "plain.txt"})
	p := denyPolicy(t, dir, "read(secrets/*)", "read(secrets/*/x/*.pem)")
	reads := countReadDir(t)
	if d, ok := p.DeniedByAnotherName(OtherNames{Tool: "read", Kind: "read", Bases: []string{dir}, MaxEntries: 5}, filepath.Join(dir, "link.txt")); ok {
		t.Fatalf("denied: %+v", d)
	}
	if *reads != 1 {
		t.Errorf("%d directories read, want 1 (secrets/ only)", *reads)
	}
}

// BenchmarkDeniedByAnotherName: a call on a file with one link pays one
// stat whatever the wildcard rules (no directory read), as it did under
// a plain-path rule before wildcards were searched ("one-link-plain"); a
// file with two links pays a search of the tree (here 1,000 files in 10
// folders).
func BenchmarkDeniedByAnotherName(b *testing.B) {
	files := map[string]string{".env": "S\n"}
	for i := range 1000 {
		files[fmt.Sprintf("src/p%d/f%d.go", i%10, i)] = "package p\n"
	}
	dir := linkFixture(b, files, map[string]string{"linked.txt": "src/p0/f0.go"})
	wild := denyPolicy(b, dir, "read(.env*)", "read(**/.env)", "read(secrets/*)")
	plain := denyPolicy(b, dir, "read(.env)")
	for _, bc := range []struct {
		name, path string
		p          *Policy
	}{{"one-link-plain", "src/p1/f1.go", plain}, {"one-link", "src/p1/f1.go", wild}, {"two-links", "linked.txt", wild}} {
		p := bc.p
		b.Run(bc.name, func(b *testing.B) {
			reads := countReadDir(b)
			q := OtherNames{Tool: "read", Kind: "read", Bases: []string{dir}, MaxEntries: 500_000}
			abs := filepath.Join(dir, bc.path)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := p.DeniedByAnotherName(q, abs); ok {
					b.Fatal("denied")
				}
			}
			b.ReportMetric(float64(*reads)/float64(b.N), "dirs/op")
		})
	}
}
