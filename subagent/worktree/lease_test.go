package worktree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// assertNothingLeft fails when repo has any acp-agent worktree, branch or
// worktree admin entry, or its status is not clean.
func assertNothingLeft(t *testing.T, dir string) {
	t.Helper()
	if b := git(t, dir, "branch", "--list", "acp-agent/*"); b != "" {
		t.Errorf("branches left: %q", b)
	}
	if l := git(t, dir, "worktree", "list", "--porcelain"); strings.Count(l, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(dir, ".acp-agent")); !os.IsNotExist(err) {
		t.Errorf(".acp-agent left: %v", err)
	}
	if s := git(t, dir, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("status not clean:\n%s", s)
	}
}

// A worktree git left "locked initializing" (its checkout killed) is
// removed with its branch: unlocked first, as prune and branch -D would
// refuse it.
func TestRemoveLockedInitializing(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	wt, err := g.Create(ctx, dir, "half")
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "worktree", "lock", "--reason", "initializing", wt.Path)
	if err := g.Remove(ctx, wt); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, dir)
}

// A lock a person put on a worktree for another reason is not lifted.
func TestRemoveKeepsAPersonsLock(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	wt, err := g.Create(ctx, dir, "mine")
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "worktree", "lock", "--reason", "on a usb stick", wt.Path)
	_ = g.Remove(ctx, wt)
	if !strings.Contains(git(t, dir, "worktree", "list", "--porcelain"), "locked on a usb stick") {
		t.Error("the person's lock was lifted")
	}
}

// A cancelled Add leaves nothing: the checkout is killed and what git made
// is removed.
func TestAddCancelledLeavesNothing(t *testing.T) {
	dir := repo(t)
	g := newGit()
	wt, err := g.Plan(context.Background(), dir, "cut")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Add(ctx, wt); err == nil {
		t.Fatal("a cancelled add succeeded")
	}
	assertNothingLeft(t, dir)
}

// Two sibling worktrees removed at the same moment are both removed,
// every round (git steps on one repository are serialized).
func TestSiblingsRemoveAtOnce(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		a, err := g.Create(ctx, dir, "a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.Create(ctx, dir, "b")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, wt := range []worktree.Worktree{a, b} {
			wg.Go(func() {
				ch, err := g.Changes(ctx, wt)
				if err == nil && !ch.Changed {
					err = g.Remove(ctx, wt)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d sibling %d: %v", round, i, err)
			}
		}
		if worktree.Exists(a) || worktree.Exists(b) {
			t.Fatalf("round %d: a sibling was kept", round)
		}
	}
	assertNothingLeft(t, dir)
}

// The journal: an intent no child recorded is removed with its worktree
// and branch (also one git left locked, or one git never made); a
// recorded one just ends; one another live holder has open is skipped.
func TestIntentSweep(t *testing.T) {
	ctx := context.Background()
	dir := repo(t)
	g := newGit()
	in := worktree.Intents{Dir: filepath.Join(t.TempDir(), "intents")}
	plan := func(name string) worktree.Worktree {
		wt, err := g.Plan(ctx, dir, name)
		if err != nil {
			t.Fatal(err)
		}
		return wt
	}
	// Left by a "killed" process: the intent file written, its lock gone
	// (Begin's file closed without End).
	leave := func(name string, make func(wt worktree.Worktree)) worktree.Worktree {
		wt := plan(name)
		o, err := in.Begin(name, wt)
		if err != nil {
			t.Fatal(err)
		}
		make(wt)
		worktree.CloseForTest(o)
		return wt
	}
	added := func(wt worktree.Worktree) {
		if err := g.Add(ctx, wt); err != nil {
			t.Fatal(err)
		}
	}
	leave("never-added", func(worktree.Worktree) {})
	leave("added", added)
	leave("locked", func(wt worktree.Worktree) {
		added(wt)
		git(t, dir, "worktree", "lock", "--reason", "initializing", wt.Path)
	})
	rec := leave("recorded", added)
	held := plan("held")
	o, err := in.Begin("held", held)
	if err != nil {
		t.Fatal(err)
	}
	added(held)

	removed, err := in.Sweep(ctx, g, func(name string, _ worktree.Worktree) bool { return name == "recorded" })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range removed {
		names = append(names, it.Name)
	}
	if got := strings.Join(names, ","); got != "added,locked,never-added" {
		t.Errorf("removed %q", got)
	}
	if !worktree.Exists(rec) || !worktree.Exists(held) {
		t.Fatal("a recorded or held worktree was removed")
	}
	entries, _ := os.ReadDir(in.Dir)
	if len(entries) != 1 || entries[0].Name() != "held.json" {
		t.Errorf("intents left: %v", entries)
	}
	o.End()
	for _, wt := range []worktree.Worktree{rec, held} {
		if err := g.Remove(ctx, wt); err != nil {
			t.Fatal(err)
		}
	}
	assertNothingLeft(t, dir)
	if removed, err := in.Sweep(ctx, g, func(string, worktree.Worktree) bool { return false }); err != nil || len(removed) != 0 {
		t.Errorf("a second sweep: %v %v", removed, err)
	}
}
