package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/local"
	"github.com/acp-agent/acp-agent/agent/tool/workspace/workspacetest"
)

// TestSearchStopsAtMaxVisited: a walk is cut after its limit of visited
// entries, and glob and grep say so (raw Truncated and the note naming
// the limit). The limit is set small on the tools; the root counts as one
// entry, so a flat directory cut at max yields its first max-1 files;
// in a tree, directories count too (and are read ahead by the workers,
// which must not change where the cut falls).
func TestSearchStopsAtMaxVisited(t *testing.T) {
	cwd := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(cwd, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("hit\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const files = 40
	for i := range files {
		write(fmt.Sprintf("flat/f%02d.txt", i))
	}
	// tree/d0 ... tree/d4, ten files each.
	for d := range 5 {
		for i := range 10 {
			write(fmt.Sprintf("tree/d%d/f%02d.txt", d, i))
		}
	}
	r := workspace.Static{Cwd: cwd, Files: local.Files{}, Permissions: &local.Scripted{}}
	tests := []struct {
		name      string
		tool      string
		path      string
		max       int
		wantFound int
		wantCut   bool
	}{
		{"glob cut", GlobToolName, "flat", 12, 11, true},
		{"grep cut", GrepToolName, "flat", 12, 11, true},
		{"glob at the limit", GlobToolName, "flat", files + 1, files, false},
		{"grep at the limit", GrepToolName, "flat", files + 1, files, false},
		{"glob one short", GlobToolName, "flat", files, files - 1, true},
		// root, d0, its 10 files, d1, its 10 files: 23 entries.
		{"glob tree cut", GlobToolName, "tree", 23, 20, true},
		{"grep tree cut", GrepToolName, "tree", 23, 20, true},
		{"glob tree whole", GlobToolName, "tree", 56, 50, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				tl   tool.Tool
				args any
			)
			switch tt.tool {
			case GlobToolName:
				g := NewGlob(r)
				g.maxVisited = tt.max
				tl, args = g, map[string]any{"pattern": "*.txt", "path": tt.path}
			default:
				g := NewGrep(r)
				g.maxVisited = tt.max
				tl, args = g, map[string]any{"pattern": "hit", "path": tt.path, "limit": 1000}
			}
			raw, _ := json.Marshal(args)
			res, err := tl.Execute(context.Background(), tool.Invocation{CallID: "c1", Name: tt.tool, Arguments: raw, Caller: caller("s")})
			if err != nil || res.IsError {
				t.Fatalf("err %v, result %q", err, workspacetest.Text(res))
			}
			var found int
			var truncated bool
			switch out := res.Raw.(type) {
			case GlobOutput:
				found, truncated = len(out.Files), out.Truncated
			case GrepOutput:
				found, truncated = out.Matches, out.Truncated
			default:
				t.Fatalf("raw %T", res.Raw)
			}
			note := fmt.Sprintf("[The search stopped after %d entries; search a narrower path.]", tt.max)
			text := workspacetest.Text(res)
			if found != tt.wantFound || truncated != tt.wantCut || strings.Contains(text, note) != tt.wantCut {
				t.Fatalf("found %d (want %d), truncated %v (want %v), text:\n%s", found, tt.wantFound, truncated, tt.wantCut, text)
			}
		})
	}
}

// TestMaxVisitedDefault: the tools cut their walks at MaxVisited,
// 500,000 entries, unless a test sets a limit.
func TestMaxVisitedDefault(t *testing.T) {
	if MaxVisited != 500_000 {
		t.Fatalf("MaxVisited = %d", MaxVisited)
	}
	r := workspace.Static{Cwd: t.TempDir(), Files: local.Files{}}
	for name, got := range map[string]int{
		"glob":    visitLimit(NewGlob(r).maxVisited),
		"grep":    visitLimit(NewGrep(r).maxVisited),
		"walker":  newWalker(nil).max,
		"grepRun": newGrepRun(regexp.MustCompile("x"), 1, true).maxVisited,
	} {
		if got != 500_000 {
			t.Errorf("%s: limit %d, want 500000", name, got)
		}
	}
}
