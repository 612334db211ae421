package rootpolicy

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

// writeUser writes a user settings file and returns its path.
func writeUser(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// countingLoader loads the user file at path for every cwd and counts
// the loads.
func countingLoader(path string, n *atomic.Int32) Loader {
	return func(cwd string) *Policy {
		n.Add(1)
		return settings.Load(path, cwd)
	}
}

// A root's policy is loaded once however many times (and from however
// many goroutines) it is asked for, its problems logged once; Forget
// drops it, so the next ask loads the file again.
func TestCacheLoadsEachRootOnce(t *testing.T) {
	var loads atomic.Int32
	var logs bytes.Buffer
	c := &Cache{
		Load: countingLoader(writeUser(t, `{not json`), &loads),
		Log:  slog.New(slog.NewTextHandler(&logs, nil)),
	}
	cwd := t.TempDir()
	var wg sync.WaitGroup
	got := make([]*Policy, 8)
	for i := range got {
		wg.Go(func() { got[i] = c.For("root-a", cwd) })
	}
	wg.Wait()
	for _, p := range got[1:] {
		if p != got[0] {
			t.Fatal("two callers of one root got different policies")
		}
	}
	if len(got[0].Problems()) == 0 {
		t.Fatal("a broken user file reported no problem")
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
	// Concurrent first asks may each load; only one policy is kept, and
	// later asks load nothing.
	before := loads.Load()
	c.For("root-a", cwd)
	if loads.Load() != before {
		t.Fatal("a cached root was loaded again")
	}
	if n := strings.Count(logs.String(), "settings file not applied"); n < 1 || int32(n) != before {
		t.Fatalf("problems logged %d times for %d loads:\n%s", n, before, logs.String())
	}

	c.For("root-b", cwd)
	if c.Len() != 2 {
		t.Fatalf("Len = %d after a second root, want 2", c.Len())
	}
	c.Forget("root-a")
	if c.Len() != 1 {
		t.Fatalf("Len = %d after Forget, want 1", c.Len())
	}
	n := loads.Load()
	c.For("root-a", cwd)
	if loads.Load() != n+1 {
		t.Fatal("a forgotten root was not loaded again")
	}
}

// Without a Loader there is no policy, and commands get the environment
// without the secret variables only.
func TestCacheWithoutLoader(t *testing.T) {
	c := &Cache{Environ: func() []string { return []string{"PATH=/bin", "MY_KEY=s3cret", "HOME=/h"} }, SecretEnv: []string{"MY_KEY"}}
	if p := c.For("root", t.TempDir()); p != nil {
		t.Fatalf("For without a Loader = %v, want nil", p)
	}
	env, unset := c.CommandEnv("root", t.TempDir())
	if slices.Contains(env, "MY_KEY=s3cret") || !slices.Contains(env, "PATH=/bin") {
		t.Fatalf("env = %v", env)
	}
	if !slices.Contains(unset, "MY_KEY") {
		t.Fatalf("unset = %v, want MY_KEY among them", unset)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
}

// A root's env section filters its commands' environment; FilteredEnv
// applies a cwd's settings without caching them.
func TestCacheCommandEnvFollowsTheRootsSettings(t *testing.T) {
	var loads atomic.Int32
	c := &Cache{
		Load:      countingLoader(writeUser(t, `{"env": {"exclude": ["DROP_*"]}}`), &loads),
		Environ:   func() []string { return []string{"PATH=/bin", "DROP_ME=1", "KEEP=2", "API_KEY=k"} },
		SecretEnv: []string{"API_KEY"},
	}
	cwd := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"CommandEnv", func() []string { e, _ := c.CommandEnv("root", cwd); return e }()},
		{"FilteredEnv", c.FilteredEnv(cwd)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if slices.Contains(tc.env, "DROP_ME=1") || slices.Contains(tc.env, "API_KEY=k") {
				t.Fatalf("env = %v: an excluded or secret variable is passed", tc.env)
			}
			if !slices.Contains(tc.env, "KEEP=2") || !slices.Contains(tc.env, "PATH=/bin") {
				t.Fatalf("env = %v: a plain variable is missing", tc.env)
			}
		})
	}
	if _, unset := c.CommandEnv("root", cwd); !slices.Contains(unset, "DROP_ME") {
		t.Fatalf("unset = %v, want DROP_ME", unset)
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d: FilteredEnv cached a policy", c.Len())
	}
}
