package settings_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

// TestConcurrentSavesKeepEveryRule: forty "always allow" answers saved at
// once, each through its own Policy (as forty root sessions would), keep
// all forty rules.
func TestConcurrentSavesKeepEveryRule(t *testing.T) {
	user := filepath.Join(t.TempDir(), "acp-agent", "settings.json")
	cwd := t.TempDir()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- settings.Load(user, cwd).SaveAllow(fmt.Sprintf("bash(echo %d)", i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := settings.ReadFile(user)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.Projects[cwd].Allow); got != n {
		t.Errorf("%d of %d rules kept", got, n)
	}
}

// TestSaveRefusesASymlinkedFile: a user settings file that is a symlink
// (a dotfiles checkout) is reported and left as it is, link and target.
func TestSaveRefusesASymlinkedFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "settings.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "acp-agent", "settings.json")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	err := settings.Load(link, t.TempDir()).SaveAllow("bash(make)")
	if !errors.Is(err, settings.ErrSymlinkedFile) {
		t.Fatalf("saved through a symlink: %v", err)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", info, err)
	}
	if data, _ := os.ReadFile(target); string(data) != "{}\n" {
		t.Errorf("the target changed: %q", data)
	}
}

// A project's settings file is read beneath the project (internal/beneath):
// one symlinked out of it is left out with the reason, even when what it
// points to is a valid settings file.
func TestProjectSettingsSymlinkedOutRefused(t *testing.T) {
	cwd, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".acp-agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "settings.json")
	if err := os.WriteFile(target, []byte(`{"permissions":{"deny":["bash"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, settings.ProjectPath(cwd)); err != nil {
		t.Fatal(err)
	}
	p := settings.Load("", cwd)
	if dec, _ := p.Decide(settings.Call{Tool: "bash"}); dec == settings.Deny {
		t.Fatal("a project file outside the project was read")
	}
	probs := p.Problems()
	if len(probs) != 1 || !strings.Contains(probs[0].Error(), "resolves outside") {
		t.Fatalf("problems %v, want the refusal with its reason", probs)
	}
	// Inside the project, a symlink is followed as before.
	inner := filepath.Join(cwd, "cfg.json")
	if err := os.WriteFile(inner, []byte(`{"permissions":{"deny":["bash"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(settings.ProjectPath(cwd))
	if err := os.Symlink("../cfg.json", settings.ProjectPath(cwd)); err != nil {
		t.Fatal(err)
	}
	if dec, _ := settings.Load("", cwd).Decide(settings.Call{Tool: "bash"}); dec != settings.Deny {
		t.Fatalf("decision %v, want deny from the project file", dec)
	}
}
