package gitrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/internal/proctest"
)

func TestEnvDropsEveryGitVariable(t *testing.T) {
	base := []string{"HOME=/h", "GIT_DIR=/x/.git", "GIT_INDEX_FILE=/x/.git/index", "GIT_WORK_TREE=/x",
		"GIT_OBJECT_DIRECTORY=/x/o", "GIT_ALTERNATE_OBJECT_DIRECTORIES=/y", "GIT_COMMON_DIR=/x", "GIT_CONFIG_PARAMETERS='core.fsmonitor'='x'",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/evil", "GIT_EXTERNAL_DIFF=/evil", "PATH=/bin"}
	got := Env(base, "GIT_INDEX_FILE=/tmp/own")
	for _, kv := range got {
		if strings.HasPrefix(kv, "GIT_") && !slices.Contains(hardening, kv) && kv != "GIT_INDEX_FILE=/tmp/own" {
			t.Errorf("inherited %s", kv)
		}
	}
	for _, want := range append([]string{"HOME=/h", "PATH=/bin", "GIT_INDEX_FILE=/tmp/own"}, hardening...) {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	if !slices.Contains(got, "GIT_CONFIG_NOSYSTEM=1") {
		t.Error("no GIT_CONFIG_NOSYSTEM")
	}
}

// A cancelled git is killed with its whole process group at once: a
// checkout's helper processes do not outlive it, and Run does not wait
// for them.
func TestCancelKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "helper")
	fake := filepath.Join(dir, "git")
	script := "#!/bin/sh\ncase \"$*\" in *config*) exit 0;; esac\nsleep 60 &\necho $! > " + pidFile + "\nsleep 60\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, fake, dir, nil, "worktree", "add")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var helper int
	for range 500 {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			helper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if helper == 0 {
		t.Fatal("the fake git did not start its helper")
	}
	pgid := cmd.Process.Pid
	cancel()
	_ = cmd.Wait()
	for range 500 {
		if live, _ := proctest.LiveGroupMembers(pgid); len(live) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	live, _ := proctest.LiveGroupMembers(pgid)
	t.Fatalf("git's group %d still has %v after the cancel", pgid, live)
}

// TestMergeRunsNoPlantedDriverOrSigner (issue 51): a repository's config
// can make a merge run a program of its own: a merge driver, picked by a
// committed .gitattributes (merge=Planted) or by merge.default, and a
// signing program (commit.gpgSign with gpg.program). A merge through
// Command runs neither, and still merges (git's own text merge stands in
// for the driver). Control: plain git runs both.
func TestMergeRunsNoPlantedDriverOrSigner(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	ran := filepath.Join(t.TempDir(), "ran")
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		git := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		write := func(name, content string, mode os.FileMode) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
				t.Fatal(err)
			}
		}
		git("init", "--quiet", "--initial-branch=main")
		write("a.txt", "1\n2\n3\n4\n5\n6\n7\n", 0o644)
		write("b.dat", "1\n2\n3\n4\n5\n6\n7\n", 0o644)
		write(".gitattributes", "*.txt merge=Planted\n", 0o644)
		git("add", ".")
		git("commit", "--quiet", "-m", "base")
		git("checkout", "--quiet", "-b", "side")
		write("a.txt", "one\n2\n3\n4\n5\n6\n7\n", 0o644)
		write("b.dat", "one\n2\n3\n4\n5\n6\n7\n", 0o644)
		git("commit", "--quiet", "-am", "side")
		git("checkout", "--quiet", "main")
		write("a.txt", "1\n2\n3\n4\n5\n6\nseven\n", 0o644)
		write("b.dat", "1\n2\n3\n4\n5\n6\nseven\n", 0o644)
		git("commit", "--quiet", "-am", "main")
		for _, p := range []string{"planted-driver", "planted-default", "planted-gpg"} {
			// A driver that keeps ours and succeeds lets the control
			// merge reach its commit, where the signer runs.
			script := "#!/bin/sh\necho " + p + " >> " + ran + "\n"
			if p == "planted-gpg" {
				script += "exit 1\n"
			}
			write(filepath.Join(".git", p), script, 0o755)
		}
		git("config", "merge.Planted.driver", filepath.Join(dir, ".git", "planted-driver")+" %A %O %B")
		git("config", "merge.default", "other")
		git("config", "merge.other.driver", filepath.Join(dir, ".git", "planted-default")+" %A %O %B")
		git("config", "commit.gpgSign", "true")
		git("config", "gpg.program", filepath.Join(dir, ".git", "planted-gpg"))
		return dir
	}
	identity := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}

	dir := setup(t)
	if out, err := Command(t.Context(), "", dir, identity, "merge", "--no-edit", "-m", "merged", "side").CombinedOutput(); err != nil {
		t.Fatalf("merge through Command: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Fatalf("the merge ran planted code:\n%s", b)
	}
	for _, f := range []string{"a.txt", "b.dat"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != "one\n2\n3\n4\n5\n6\nseven\n" {
			t.Errorf("%s merged to %q, want both sides' changes", f, b)
		}
	}

	control := setup(t)
	cmd := exec.Command("git", "merge", "--no-edit", "-m", "merged", "side")
	cmd.Dir = control
	cmd.Env = append(os.Environ(), identity...)
	_ = cmd.Run() // the planted programs fail it
	b, _ := os.ReadFile(ran)
	for _, p := range []string{"planted-driver", "planted-default", "planted-gpg"} {
		if !strings.Contains(string(b), p) {
			t.Errorf("control: plain git did not run %s (ran %q): the test proves less than it says", p, b)
		}
	}
}
