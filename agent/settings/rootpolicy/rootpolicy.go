package rootpolicy

import (
	"log/slog"
	"os"
	"sync"

	"github.com/acp-agent/acp-agent/agent/settings"
)

// Policy, Sandbox and OtherNames are the settings types a caller of the
// Cache names.
type (
	Policy     = settings.Policy
	Sandbox    = settings.Sandbox
	OtherNames = settings.OtherNames
)

// Loader loads the settings in force for a project directory.
type Loader = func(cwd string) *Policy

// Cache is the settings of each root session. The zero value has no
// settings and starts commands from os.Environ.
type Cache struct {
	// Load loads the settings of a cwd; nil means no settings files.
	Load Loader
	// Environ is the environment commands start from (nil: os.Environ);
	// SecretEnv names variables always left out of it (the provider's key
	// variable).
	Environ   func() []string
	SecretEnv []string
	// Log receives the problems of a root's settings, once per root.
	Log *slog.Logger

	mu       sync.Mutex
	policies map[string]*Policy
}

// For returns the policy of root session root, whose cwd is cwd, loading
// it the first time; nil when the Cache has no Loader.
func (c *Cache) For(root, cwd string) *Policy {
	if c.Load == nil {
		return nil
	}
	c.mu.Lock()
	p, ok := c.policies[root]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = c.Load(cwd)
	for _, err := range p.Problems() {
		// Reported once per root session; nothing of that file applies.
		c.logger().Warn("settings file not applied", "session_id", root, "err", err)
	}
	for _, err := range p.Ignored() {
		c.logger().Warn("project setting not applied", "session_id", root, "err", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.policies[root]; ok {
		return prev
	}
	if c.policies == nil {
		c.policies = map[string]*Policy{}
	}
	c.policies[root] = p
	return p
}

// Forget drops the policy of root session root (it was released).
func (c *Cache) Forget(root string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.policies, root)
}

// Len is how many root sessions' policies are held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.policies)
}

// CommandEnv is the environment of the commands of root session root,
// and the names a client terminal must unset.
func (c *Cache) CommandEnv(root, cwd string) (env, unset []string) {
	all := c.environ()()
	e := c.For(root, cwd).Env()
	return settings.CommandEnv(all, c.SecretEnv, e), settings.DroppedNames(all, c.SecretEnv, e)
}

// FilteredEnv is the environment of processes started for a session in
// cwd before it has a policy of its own (its MCP servers): the agent's
// without secrets, under cwd's settings (loaded afresh, not cached).
func (c *Cache) FilteredEnv(cwd string) []string {
	var e settings.Env
	if c.Load != nil {
		e = c.Load(cwd).Env()
	}
	return settings.CommandEnv(c.environ()(), c.SecretEnv, e)
}

func (c *Cache) environ() func() []string {
	if c.Environ != nil {
		return c.Environ
	}
	return os.Environ
}

func (c *Cache) logger() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}
