package ownpaths

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClaims(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		run  func(p string) bool
		want bool
	}{
		{"created by us", func(p string) bool {
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			return Claimed(p)
		}, true},
		{"pending counts while the creation runs", func(p string) bool {
			end := Begin(p)
			defer end(false)
			return Claimed(p)
		}, true},
		{"someone else made it first", func(p string) bool {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			return Claimed(p)
		}, false},
		{"replaced after our creation", func(p string) bool {
			end := Begin(p)
			end(os.Mkdir(p, 0o755) == nil)
			if err := os.Rename(p, p+".ours"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return Claimed(p)
		}, false},
		{"never claimed", func(p string) bool {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return Claimed(p)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.Base(t.Name()))
			if got := tt.run(p); got != tt.want {
				t.Fatalf("Claimed = %v, want %v", got, tt.want)
			}
		})
	}
}

// A claim holds its file's inode until its creator releases it: a file
// made after ours was removed cannot take over its inode number and look
// like ours (before, 2 of 3 runs found a new .git in a reused inode
// claimed). After Release, the file is no longer claimed.
func TestClaimSurvivesNoInodeReuse(t *testing.T) {
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours")
	end := Begin(ours)
	end(os.Mkdir(ours, 0o755) == nil)
	if !Claimed(ours) {
		t.Fatal("not claimed")
	}
	before, _ := idOf(ours)
	if err := os.Remove(ours); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		p := filepath.Join(dir, ".git")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		id, _ := idOf(p)
		if id == before {
			t.Fatalf("run %d: a new directory got the claimed inode while the claim holds it", i)
		}
		if Claimed(p) {
			t.Fatalf("run %d: a new .git is taken for ours", i)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	kept := filepath.Join(dir, "kept")
	end = Begin(kept)
	end(os.Mkdir(kept, 0o755) == nil)
	Release(kept)
	if Claimed(kept) {
		t.Fatal("still claimed after Release")
	}
	Release(kept) // twice: a no-op
}

// ReleaseRemoved drops the claim of a file its creator removed, and
// keeps one still there.
func TestReleaseRemoved(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "made")
	end := Begin(p)
	end(os.Mkdir(p, 0o755) == nil)
	ReleaseRemoved(p)
	if !Claimed(p) {
		t.Fatal("a claim on a file still there was dropped")
	}
	id, _ := idOf(p)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	ReleaseRemoved(p)
	mu.Lock()
	held := created[id]
	mu.Unlock()
	if held != nil {
		t.Fatal("the removed file's claim is still held")
	}
}
