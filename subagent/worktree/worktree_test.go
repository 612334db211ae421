package worktree_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/internal/errcode"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// gitEnv pins identity and dates so commits are the same on every run.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
	"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
	"GIT_COMMITTER_DATE=2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent",
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo makes a repository with one commit holding a.txt.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "a.txt")
	git(t, dir, "commit", "--quiet", "-m", "first")
	return dir
}

func newGit() worktree.Git { return worktree.Git{Env: gitEnv} }

func TestCreateUntouchedRemove(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	wt, err := g.Create(ctx, dir, "child-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, ".acp-agent", "worktrees", "child-1"); wt.Path != want {
		t.Fatalf("path %s, want %s", wt.Path, want)
	}
	if wt.Branch != "acp-agent/child-1" || wt.Base != git(t, dir, "rev-parse", "HEAD") {
		t.Fatalf("worktree %+v", wt)
	}
	if got := git(t, wt.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
		t.Fatalf("worktree is on %q", got)
	}
	if data, err := os.ReadFile(filepath.Join(wt.Path, "a.txt")); err != nil || string(data) != "one\n" {
		t.Fatalf("a.txt in worktree: %q %v", data, err)
	}
	if st := git(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("parent status not clean:\n%s", st)
	}
	ch, err := g.Changes(ctx, wt)
	if err != nil || ch.Changed || ch.Stat != "" {
		t.Fatalf("untouched worktree: %+v %v", ch, err)
	}
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if worktree.Exists(wt) {
		t.Fatal("worktree folder still there")
	}
	if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
		t.Fatalf(".acp-agent left behind: %v", err)
	}
	if out := git(t, dir, "branch", "--list", wt.Branch); out != "" {
		t.Fatalf("branch left: %q", out)
	}
	if out := git(t, dir, "worktree", "list", "--porcelain"); strings.Contains(out, "child-1") {
		t.Fatalf("worktree still registered:\n%s", out)
	}
}

func TestChangesDiffstat(t *testing.T) {
	ctx := context.Background()
	g := newGit()
	tests := []struct {
		name        string
		edit        func(t *testing.T, path string)
		commits     int
		wantSummary string
		wantStat    []string
	}{
		{"modified", func(t *testing.T, p string) { write(t, p, "a.txt", "one\ntwo\n") }, 0,
			"1 file changed, 1 insertion(+)", []string{"a.txt | 1 +"}},
		{"untracked", func(t *testing.T, p string) { write(t, p, "new.txt", "x\ny\n") }, 0,
			"1 file changed, 2 insertions(+)", []string{"new.txt | 2 ++"}},
		{"committed", func(t *testing.T, p string) {
			write(t, p, "a.txt", "uno\n")
			git(t, p, "commit", "--quiet", "-am", "edit")
		}, 1, "1 file changed, 1 insertion(+), 1 deletion(-)", []string{"a.txt | 2 +-"}},
		{"deleted", func(t *testing.T, p string) { _ = os.Remove(filepath.Join(p, "a.txt")) }, 0,
			"1 file changed, 1 deletion(-)", []string{"a.txt | 1 -"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := repo(t)
			wt, err := g.Create(ctx, dir, "c")
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(t, wt.Path)
			ch, err := g.Changes(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			if !ch.Changed || ch.Commits != tt.commits || ch.Summary != tt.wantSummary {
				t.Fatalf("changes %+v", ch)
			}
			for _, w := range tt.wantStat {
				if !strings.Contains(ch.Stat, w) {
					t.Fatalf("stat %q lacks %q", ch.Stat, w)
				}
			}
			// The worktree's own index is untouched by the diffstat.
			if tt.name == "untracked" {
				if st := git(t, wt.Path, "status", "--porcelain"); st != "?? new.txt" {
					t.Fatalf("worktree index changed: %q", st)
				}
			}
			if st := git(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Fatalf("parent status not clean:\n%s", st)
			}
			if err := g.Remove(ctx, wt); err != nil {
				t.Fatal(err)
			}
			if worktree.Exists(wt) {
				t.Fatal("changed worktree not removed by Remove")
			}
		})
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCreateFailures(t *testing.T) {
	ctx := context.Background()
	g := newGit()
	t.Run("not a repository", func(t *testing.T) {
		_, err := g.Create(ctx, t.TempDir(), "c")
		if !errcode.Has(err, worktree.CodeNotARepository) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("no commit", func(t *testing.T) {
		dir := t.TempDir()
		git(t, dir, "init", "--quiet")
		_, err := g.Create(ctx, dir, "c")
		if !errcode.Has(err, worktree.CodeNoCommit) {
			t.Fatalf("err %v", err)
		}
		assertNothingBehind(t, dir)
	})
	t.Run("bad names", func(t *testing.T) {
		dir := repo(t)
		for _, name := range []string{"", "..", "a/b", "a..b", "x.lock"} {
			_, err := g.Create(ctx, dir, name)
			if !errcode.Has(err, worktree.CodeInvalidName) {
				t.Fatalf("name %q: err %v", name, err)
			}
		}
		assertNothingBehind(t, dir)
	})
	t.Run("branch exists", func(t *testing.T) {
		dir := repo(t)
		git(t, dir, "branch", "acp-agent/c")
		_, err := g.Create(ctx, dir, "c")
		if !errcode.Has(err, worktree.CodeExists) {
			t.Fatalf("err %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
			t.Fatalf(".acp-agent left behind: %v", err)
		}
	})
	t.Run("git fails midway", func(t *testing.T) {
		// A file where the worktrees folder must go: it is not a real
		// directory, so Create refuses before git runs and nothing is
		// created.
		dir := repo(t)
		if err := os.Mkdir(filepath.Join(dir, ".acp-agent"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, dir, ".acp-agent/worktrees", "in the way")
		_, err := g.Create(ctx, dir, "c")
		if !errcode.Has(err, worktree.CodeUnsafeFolder) {
			t.Fatalf("err %v", err)
		}
		if out := git(t, dir, "branch", "--list", "acp-agent/*"); out != "" {
			t.Fatalf("branch left: %q", out)
		}
	})
	t.Run("worktree add fails", func(t *testing.T) {
		// A locked index of the main work tree does not stop worktree add,
		// but an unwritable .git/worktrees does.
		dir := repo(t)
		admin := filepath.Join(dir, ".git", "worktrees")
		write(t, dir, ".git/worktrees", "not a folder")
		_, err := g.Create(ctx, dir, "c")
		if !errcode.Has(err, worktree.CodeGitFailed) {
			t.Fatalf("err %v", err)
		}
		_ = os.Remove(admin)
		assertNothingBehind(t, dir)
	})
	t.Run("git missing", func(t *testing.T) {
		_, err := worktree.Git{Path: filepath.Join(t.TempDir(), "no-git")}.Create(ctx, t.TempDir(), "c")
		if !errcode.Has(err, worktree.CodeGitUnavailable) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		dir := repo(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := g.Create(cctx, dir, "c")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		assertNothingBehind(t, dir)
	})
}

func assertNothingBehind(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
		t.Fatalf(".acp-agent left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err == nil {
		if out := git(t, dir, "branch", "--list", "acp-agent/*"); out != "" {
			t.Fatalf("branch left: %q", out)
		}
		if out := git(t, dir, "worktree", "list"); strings.Count(out, "\n") > 0 {
			t.Fatalf("extra worktree registered:\n%s", out)
		}
	}
}

func TestRemoveAfterFolderGone(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	wt, err := g.Create(ctx, dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	assertNothingBehind(t, dir)
}

func TestRootFromSubfolder(t *testing.T) {
	dir := repo(t)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := newGit().Root(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(root); got != want {
		t.Fatalf("root %s, want %s", root, dir)
	}
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	wt, err := g.Create(ctx, dir, "c")
	if err != nil {
		t.Fatal(err)
	}
	// Removed with its branch: restored from the base.
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if got := git(t, wt.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
		t.Fatalf("restored on %q", got)
	}
	// Folder deleted by hand, branch kept with a commit: restored on it.
	write(t, wt.Path, "a.txt", "edited\n")
	git(t, wt.Path, "commit", "--quiet", "-am", "edit")
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(wt.Path, "a.txt")); string(data) != "edited\n" {
		t.Fatalf("restored a.txt %q", data)
	}
	if err := g.Restore(ctx, wt); err != nil {
		t.Fatalf("restore of a present worktree: %v", err)
	}
	if st := git(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("parent status not clean:\n%s", st)
	}
}

// BenchmarkCreateChangesRemove is the git cost of one isolated child that
// changes nothing: create, inspect, remove.
func BenchmarkCreateChangesRemove(b *testing.B) {
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "--quiet"}, {"commit", "--quiet", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ctx := context.Background()
	g := newGit()
	for b.Loop() {
		wt, err := g.Create(ctx, dir, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Changes(ctx, wt); err != nil {
			b.Fatal(err)
		}
		if err := g.Remove(ctx, wt); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRunsNoPlantedCode: a repository whose config names an fsmonitor
// and which holds a post-checkout hook (as a command the agent ran may
// have left them) has neither run by the worktree's git commands
// (worktree add checks out, status reads). Control: plain git worktree
// add and git status run both, so git obeys what was planted.
func TestRunsNoPlantedCode(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	ran := filepath.Join(t.TempDir(), "ran")
	for _, p := range []string{".git/hooks/post-checkout", ".git/planted-fsmonitor", ".git/planted-filter"} {
		script := "#!/bin/sh\necho " + filepath.Base(p) + " >> " + ran + "\n"
		if p == ".git/planted-filter" {
			script += "cat\n" // a filter passes its input through
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A filter driver selected by a committed .gitattributes: smudge runs
	// on checkout (worktree add), clean on add and on a racy status.
	filter := filepath.Join(dir, ".git", "planted-filter")
	git(t, dir, "config", "filter.Planted.clean", filter)
	git(t, dir, "config", "filter.Planted.smudge", filter)
	git(t, dir, "config", "filter.Planted.required", "true")
	write(t, dir, ".gitattributes", "*.txt filter=Planted\n")
	git(t, dir, "-c", "filter.Planted.clean=cat", "add", ".gitattributes", "a.txt")
	git(t, dir, "-c", "filter.Planted.clean=cat", "commit", "--quiet", "-m", "attributes")
	git(t, dir, "config", "core.fsmonitor", filepath.Join(dir, ".git", "planted-fsmonitor"))
	g := newGit()
	wt, err := g.Create(ctx, dir, "child-1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, wt.Path, "new.txt", "changed\n")
	if _, err := g.Changes(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the worktree's git ran planted code:\n%s", b)
	}

	control := filepath.Join(t.TempDir(), "control")
	git(t, dir, "worktree", "add", "--quiet", control)
	git(t, dir, "status", "--porcelain")
	b, _ := os.ReadFile(ran)
	if !strings.Contains(string(b), "post-checkout") || !strings.Contains(string(b), "planted-fsmonitor") || !strings.Contains(string(b), "planted-filter") {
		t.Fatalf("control: plain git ran %q, want the hook, the fsmonitor and the filter: the test proves nothing", b)
	}
}

// An agent started from a git hook has GIT_DIR and GIT_INDEX_FILE set (to
// the repository being committed to). Creating a worktree of another
// repository must neither write that index nor look at that repository.
func TestCreateIgnoresInheritedGitVariables(t *testing.T) {
	ctx := context.Background()
	dir, other := repo(t), repo(t)
	index := filepath.Join(other, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_INDEX_FILE", index)
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(other, ".git", "objects"))
	g := newGit()
	wt, err := g.Create(ctx, dir, "child-1")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Repo != dir {
		t.Fatalf("worktree of %s, want %s", wt.Repo, dir)
	}
	if _, err := os.Stat(filepath.Join(wt.Path, "a.txt")); err != nil {
		t.Fatalf("worktree not checked out: %v", err)
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(before, after) {
		t.Fatal("the inherited GIT_INDEX_FILE was written")
	}
	if _, err := os.Stat(filepath.Join(other, ".git", "worktrees")); err == nil {
		t.Fatal("a worktree was added to the inherited GIT_DIR's repository")
	}
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
}

// Changes of a worktree whose folder is gone or damaged: the branch
// judges a missing folder; a folder git no longer sees as a worktree of
// its own is a CodeBroken error (never "untouched", which would remove it).
func TestChangesOfDamagedWorktree(t *testing.T) {
	ctx := context.Background()
	g := newGit()
	tests := []struct {
		name        string
		damage      func(t *testing.T, wt worktree.Worktree)
		wantCode    worktree.Code
		wantChanged bool
		wantCommits int
		wantSummary string
	}{
		{"folder gone, branch at base", func(t *testing.T, wt worktree.Worktree) {
			removeAll(t, wt.Path)
		}, "", false, 0, ""},
		{"folder gone, branch with a commit", func(t *testing.T, wt worktree.Worktree) {
			write(t, wt.Path, "a.txt", "uno\n")
			git(t, wt.Path, "commit", "--quiet", "-am", "edit")
			removeAll(t, wt.Path)
		}, "", true, 1, "1 file changed, 1 insertion(+), 1 deletion(-)"},
		{"folder and branch gone", func(t *testing.T, wt worktree.Worktree) {
			removeAll(t, wt.Path)
			git(t, wt.Repo, "worktree", "prune")
			git(t, wt.Repo, "branch", "-D", wt.Branch)
		}, "", false, 0, ""},
		{".git file gone", func(t *testing.T, wt worktree.Worktree) {
			write(t, wt.Path, "new.txt", "work\n")
			if err := os.Remove(filepath.Join(wt.Path, ".git")); err != nil {
				t.Fatal(err)
			}
		}, worktree.CodeBroken, false, 0, ""},
		{".git file damaged", func(t *testing.T, wt worktree.Worktree) {
			write(t, wt.Path, ".git", "gitdir: /nonexistent/place\n")
		}, worktree.CodeBroken, false, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := repo(t)
			wt, err := g.Create(ctx, dir, "c")
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(t, wt)
			ch, err := g.Changes(ctx, wt)
			if tt.wantCode != "" {
				if !errcode.Has(err, tt.wantCode) {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
				if _, serr := os.Stat(wt.Path); serr != nil {
					t.Fatalf("the damaged folder is gone: %v", serr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Changed != tt.wantChanged || ch.Commits != tt.wantCommits || ch.Summary != tt.wantSummary {
				t.Fatalf("changes %+v", ch)
			}
			if tt.wantChanged && !strings.Contains(ch.Stat, "a.txt") {
				t.Fatalf("stat %q", ch.Stat)
			}
		})
	}
}

func removeAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// A repository that commits .acp-agent/worktrees (or .acp-agent) as a
// symlink to an outside folder gets no worktree there: Create refuses
// with WORKTREE_UNSAFE_FOLDER, writes no .gitignore outside, checks
// nothing out there; Remove and Restore of a worktree recorded there
// refuse too and leave the outside folder's own .gitignore alone.
func TestSymlinkedWorktreesFolderRefused(t *testing.T) {
	ctx := context.Background()
	for _, link := range []string{".acp-agent/worktrees", ".acp-agent"} {
		t.Run(link, func(t *testing.T) {
			dir := repo(t)
			outside := t.TempDir()
			write(t, outside, ".gitignore", "theirs\n")
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "add", "-A")
			git(t, dir, "commit", "--quiet", "-m", "plant")
			g := newGit()
			_, err := g.Create(ctx, dir, "child-1")
			if !errcode.Has(err, worktree.CodeUnsafeFolder) {
				t.Fatalf("Create = %v, want %s", err, worktree.CodeUnsafeFolder)
			}
			if !strings.Contains(err.Error(), "symlink") {
				t.Errorf("the refusal does not say why: %v", err)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Fatalf("outside folder now holds %v", entries)
			}
			wt := worktree.Worktree{Repo: dir, Path: filepath.Join(dir, ".acp-agent/worktrees/child-1"), Branch: "acp-agent/child-1", Base: git(t, dir, "rev-parse", "HEAD")}
			if err := g.Restore(ctx, wt); !errcode.Has(err, worktree.CodeUnsafeFolder) {
				t.Fatalf("Restore = %v", err)
			}
			if err := g.Remove(ctx, wt); !errcode.Has(err, worktree.CodeUnsafeFolder) {
				t.Fatalf("Remove = %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, ".gitignore")); err != nil || string(b) != "theirs\n" {
				t.Fatalf("outside .gitignore: %q %v", b, err)
			}
		})
	}
}

// A .gitignore in the worktrees folder that is a symlink is refused, not
// followed or kept.
func TestSymlinkedIgnoreFileRefused(t *testing.T) {
	dir := repo(t)
	outside := t.TempDir()
	write(t, outside, "target", "theirs\n")
	if err := os.MkdirAll(filepath.Join(dir, ".acp-agent/worktrees"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(dir, ".acp-agent/worktrees/.gitignore")); err != nil {
		t.Fatal(err)
	}
	_, err := newGit().Create(context.Background(), dir, "c")
	if !errcode.Has(err, worktree.CodeUnsafeFolder) {
		t.Fatalf("Create = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "target")); string(b) != "theirs\n" {
		t.Fatalf("outside file now %q", b)
	}
}
