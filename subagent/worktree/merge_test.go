package worktree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// childWork makes a worktree "c" of dir and writes files in it (path ->
// content; "" deletes), then commits it as settlement does.
func childWork(t *testing.T, dir string, files map[string]string) worktree.Worktree {
	t.Helper()
	ctx := context.Background()
	g := newGit()
	wt, err := g.Create(ctx, dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if c == "" {
			if err := os.Remove(filepath.Join(wt.Path, p)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(wt.Path, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head, committed, err := g.Commit(ctx, wt, "Fix it\n\nDone.")
	if err != nil || !committed || head == wt.Base {
		t.Fatalf("commit: %s %v %v", head, committed, err)
	}
	return wt
}

// Commit commits new, changed and deleted files on the branch, with the
// author from git's config; a second Commit makes nothing.
func TestCommitOnTheBranch(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	wt := childWork(t, dir, map[string]string{"a.txt": "two\n", "new.txt": "new\n"})
	if s := git(t, wt.Path, "status", "--porcelain"); s != "" {
		t.Errorf("uncommitted after Commit: %q", s)
	}
	if got := git(t, dir, "log", "-1", "--format=%an <%ae>|%s", wt.Branch); got != "t <t@example.invalid>|Fix it" {
		t.Errorf("commit %q", got)
	}
	if _, committed, err := newGit().Commit(ctx, wt, "again"); err != nil || committed {
		t.Errorf("a second commit: %v %v", committed, err)
	}
	ch, err := newGit().Changes(ctx, wt)
	if err != nil || !ch.Changed || ch.Commits != 1 || ch.Summary != "2 files changed, 2 insertions(+), 1 deletion(-)" {
		t.Errorf("changes %+v %v", ch, err)
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name   string
		squash bool
		// parent, when set, commits this a.txt in the parent first.
		parent   string
		conflict bool
	}{
		{"fast-forward", false, "", false},
		{"merge commit", false, "one\n", false},
		{"squash", true, "", false},
		{"conflict", false, "parent\n", true},
		{"squash conflict", true, "parent\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir := repo(t)
			g := newGit()
			wt := childWork(t, dir, map[string]string{"a.txt": "two\n", "new.txt": "new\n"})
			if tt.parent != "" {
				os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x\n"), 0o644)
				os.WriteFile(filepath.Join(dir, "a.txt"), []byte(tt.parent), 0o644)
				git(t, dir, "add", "--all")
				git(t, dir, "commit", "--quiet", "-m", "parent work")
			}
			files, more, err := g.Preview(ctx, dir, wt, 10, 1000)
			if err != nil || more != 0 || len(files) != 2 || files[0].Path != "a.txt" || *files[0].OldText != "one\n" || files[0].NewText != "two\n" || files[1].Path != "new.txt" || files[1].OldText != nil {
				t.Fatalf("preview %+v %q %q %d %v", files, *files[0].OldText, files[0].NewText, more, err)
			}
			before := git(t, dir, "rev-parse", "HEAD")
			res, err := g.Merge(ctx, dir, wt, tt.squash, "Merge subagent c: Fix it")
			if tt.conflict {
				if !errcode.Has(err, worktree.CodeConflict) {
					t.Fatalf("want a conflict, got %v", err)
				}
				if files, ok := worktree.IsConflict(err); !ok || strings.Join(files, ",") != "a.txt" {
					t.Errorf("conflict files %v", files)
				}
				if s := git(t, dir, "status", "--porcelain"); s != "" || git(t, dir, "rev-parse", "HEAD") != before {
					t.Errorf("the aborted merge left %q", s)
				}
				if _, err := os.Stat(filepath.Join(dir, ".git", "MERGE_HEAD")); err == nil {
					t.Error("MERGE_HEAD left")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "two\n" {
				t.Errorf("a.txt %q", b)
			}
			if res.Into != "main" || res.Head == before || !strings.Contains(res.Stat, "2 files changed") {
				t.Errorf("result %+v", res)
			}
			parents := strings.Fields(git(t, dir, "log", "-1", "--format=%p"))
			switch {
			case tt.squash && (len(parents) != 1 || git(t, dir, "log", "-1", "--format=%s") != "Merge subagent c: Fix it"):
				t.Errorf("squash: parents %v", parents)
			case !tt.squash && tt.parent != "" && len(parents) != 2:
				t.Errorf("merge: parents %v", parents)
			}
			if s := git(t, dir, "status", "--porcelain"); s != "" {
				t.Errorf("status after the merge %q", s)
			}
			if _, err := g.Merge(ctx, dir, wt, tt.squash, "again"); !errcode.Has(err, worktree.CodeNothingToMerge) && !tt.squash {
				t.Errorf("a second merge: %v", err)
			}
		})
	}
}
