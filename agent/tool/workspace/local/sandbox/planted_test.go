package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/tool/workspace/local/sandbox"
)

// TestPlantedRepositoryLinkMovedAside (issue 51): a sandboxed command may
// write the temp dir, so it can make a repository there with a
// core.fsmonitor and link it into the working directory through a folder
// symlink; git runs that fsmonitor when someone works in the link. Such a
// link (new, or old but leading to a repository that is new) is moved
// aside; the link is renamed and what it points to is left as it was. A
// link to an ordinary folder, to a file, or to a folder inside stays
// (a new .git inside is moved aside by the existing rule), and so does a
// link to a repository that were both there before the command.
func TestPlantedRepositoryLinkMovedAside(t *testing.T) {
	requireMountNS(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct {
		name string
		// setup runs unsandboxed before the command, script in the
		// sandbox; $T is the temp dir, $O the outside dir.
		setup, script string
		moved         []string // under the cwd, in walk order
		kept          []string // under the cwd
	}{
		{name: "a repository made in the temp dir",
			script: "mkdir $T/x && " + gitPath + " init --quiet $T/x && " + gitPath + " -C $T/x config core.fsmonitor $T/evil && ln -s $T/x sub",
			moved:  []string{"sub"}},
		{name: "a .git file in the target", script: "mkdir $T/y && echo 'gitdir: /nowhere' > $T/y/.git && ln -s $T/y sub",
			moved: []string{"sub"}},
		{name: "a repository above the target in the temp dir", script: "mkdir -p $T/z/.git $T/z/deep/er && ln -s $T/z/deep/er sub",
			moved: []string{"sub"}},
		{name: "a bare repository", script: gitPath + " init --quiet --bare $T/b.git && ln -s $T/b.git sub",
			moved: []string{"sub"}},
		{name: "deeper in the tree, through a link to a link", script: "mkdir -p $T/x/.git d/e && ln -s $T/x d/e/l1 && ln -s e/l1 d/sub",
			moved: []string{"d/e/l1", "d/sub"}},
		{name: "a new link to a repository outside that was there before", setup: "mkdir -p $O/r/.git", script: "ln -s $O/r sub",
			moved: []string{"sub"}},
		{name: "an old link whose target became a repository", setup: "mkdir $T/w && ln -s $T/w sub", script: "mkdir $T/w/.git",
			moved: []string{"sub"}},
		{name: "an old link to an old repository", setup: "mkdir -p $O/r/.git && ln -s $O/r sub", script: "touch made.txt",
			kept: []string{"sub", "made.txt"}},
		{name: "an ordinary folder in the temp dir", script: "mkdir $T/plain && ln -s $T/plain sub", kept: []string{"sub"}},
		{name: "a file in a repository", script: "mkdir -p $T/x/.git && touch $T/x/f && ln -s $T/x/f sub", kept: []string{"sub"}},
		{name: "a repository inside", script: "mkdir -p a/.git && ln -s a sub", moved: []string{"a/.git"}, kept: []string{"sub"}},
		{name: "a dangling link", script: "ln -s $T/none sub", kept: []string{"sub"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			expand := func(s string) string {
				return strings.NewReplacer("$T", l.tmp, "$O", l.outside).Replace(s)
			}
			if tt.setup != "" {
				cmd := exec.Command("bash", "-c", expand(tt.setup))
				cmd.Dir = l.cwd
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			links := map[string]string{} // what each link led to before the check
			sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
			out, code, moved := runGuardedThen(t, sb, l.cwd, expand(tt.script), func() {
				_ = filepath.WalkDir(l.cwd, func(p string, d os.DirEntry, err error) error {
					if err == nil && d.Type()&os.ModeSymlink != 0 {
						links[p], _ = os.Readlink(p)
					}
					return nil
				})
			})
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			var got []string
			for _, m := range moved {
				rel, _ := filepath.Rel(l.cwd, m.Path)
				got = append(got, rel)
				if m.To != m.Path+sandbox.QuarantineSuffix {
					t.Errorf("%s moved to %s, want %s", m.Path, m.To, m.Path+sandbox.QuarantineSuffix)
				}
				if want, isLink := links[m.Path]; isLink {
					// The link itself was renamed: it still leads where it did.
					if to, err := os.Readlink(m.To); err != nil || to != want {
						t.Errorf("%s is not the link to %s: %q, %v", m.To, want, to, err)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.moved, ",") {
				t.Errorf("moved %q, want %q", got, tt.moved)
			}
			for _, p := range tt.moved {
				if _, err := os.Lstat(filepath.Join(l.cwd, p)); err == nil {
					t.Errorf("%s is still there", p)
				}
			}
			for _, p := range tt.kept {
				if _, err := os.Lstat(filepath.Join(l.cwd, p)); err != nil {
					t.Errorf("%s was not kept: %v", p, err)
				}
			}
		})
	}
}

// TestPlantedRepositoryTargetUntouched: moving a planted link aside
// touches nothing of the repository it leads to (its config with the
// planted fsmonitor is still there for the person to inspect), and git
// no longer reaches that repository through the working directory.
// Control: before the check, git status in the link runs the fsmonitor,
// so the plant is one git obeys.
func TestPlantedRepositoryTargetUntouched(t *testing.T) {
	requireMountNS(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	l := newLayout(t)
	repo := filepath.Join(l.tmp, "x")
	ran := filepath.Join(l.outside, "ran")
	script := strings.Join([]string{
		"mkdir " + repo, gitPath + " init --quiet " + repo,
		"printf '#!/bin/sh\\necho ran >> " + ran + "\\n' > " + repo + "/monitor", "chmod +x " + repo + "/monitor",
		gitPath + " -C " + repo + " config core.fsmonitor " + repo + "/monitor",
		"ln -s " + repo + " sub",
	}, " && ")
	sb := sandbox.New(sandbox.Policy{TempDir: l.tmp}, sandbox.Options{})
	out, code, moved := runGuardedThen(t, sb, l.cwd, script, func() {
		status := exec.Command(gitPath, "status", "--porcelain")
		status.Dir = filepath.Join(l.cwd, "sub")
		status.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+l.outside)
		if out, err := status.CombinedOutput(); err != nil {
			t.Fatalf("control: git status in the link: %v\n%s", err, out)
		}
		if _, err := os.Stat(ran); err != nil {
			t.Fatalf("control: git status in the link did not run the planted fsmonitor (%v): the test proves nothing", err)
		}
	})
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if len(moved) != 1 || moved[0].Path != filepath.Join(l.cwd, "sub") {
		t.Fatalf("moved %v, want the link sub", moved)
	}
	cfg, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil || !strings.Contains(string(cfg), "fsmonitor") {
		t.Fatalf("the repository behind the link changed: %q, %v", cfg, err)
	}
	if fi, err := os.Lstat(moved[0].To); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is not the moved link: %v %v", moved[0].To, fi, err)
	}
	if _, err := os.Lstat(filepath.Join(l.cwd, "sub")); err == nil {
		t.Fatal("sub is still there")
	}
}

// runGuardedThen is runGuarded with before run between the command's end
// and the guard's check.
func runGuardedThen(t *testing.T, sb *sandbox.Sandbox, cwd, script string, before func()) (string, int, []sandbox.Moved) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = cwd
	g, err := sb.Prepare(cmd)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	before()
	moved, err := g.Check()
	if err != nil {
		t.Fatalf("guard check after %q: %v", script, err)
	}
	return string(out), code, moved
}
