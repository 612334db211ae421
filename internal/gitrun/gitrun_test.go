package gitrun

import (
	"context"
	"os"
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
