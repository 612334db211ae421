package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Policy is the settings in force for one project directory: the user
// file and the project file merged by the precedence rules. Safe for
// concurrent use.
type Policy struct {
	userPath, projectPath, cwd string

	mu    sync.Mutex
	rules ruleSet
	env   Env
	sbx   Sandbox
	ctx   Context
	subs  Subagents
	// prices are the user file's price overrides.
	prices map[string]Price
	// ignored are the project settings left out (*Error,
	// CodeIgnoredSetting): the rest of that file applies.
	ignored []error
	// Problems are the files that could not be used (*Error); nothing of
	// them applies.
	problems []error
}

// Load reads the user file at userPath ("" for none) and the project file
// of cwd. A file that cannot be used is left out entirely and reported in
// Problems; Load itself never fails.
func Load(userPath, cwd string) *Policy {
	p := &Policy{userPath: userPath, cwd: cwd}
	if cwd != "" {
		p.projectPath = ProjectPath(cwd)
	}
	p.reload()
	return p
}

func (p *Policy) reload() {
	p.rules, p.env, p.sbx, p.ctx, p.subs, p.problems, p.ignored = ruleSet{}, Env{}, Sandbox{}, Context{}, Subagents{}, nil, nil
	p.prices = nil
	var user, project File
	var projectData []byte
	if p.userPath != "" {
		f, err := ReadFile(p.userPath)
		if err != nil {
			p.problems = append(p.problems, err)
		} else {
			user = f
		}
	}
	if p.projectPath != "" {
		f, data, err := readFile(p.projectPath)
		if err != nil {
			p.problems = append(p.problems, err)
		} else {
			project, projectData = f, data
		}
	}
	// allow only from the user level (its general rules and those scoped
	// to this project); the project adds deny and ask only.
	p.rules.add(user.Permissions, true)
	if scoped, ok := user.Projects[filepath.Clean(p.cwd)]; ok && p.cwd != "" {
		p.rules.add(scoped, true)
	}
	p.rules.add(project.Permissions, false)
	// The project may drop more variables, never keep secrets.
	p.env = Env{Include: user.Env.Include, Exclude: append(append([]string(nil), user.Env.Exclude...), project.Env.Exclude...)}
	p.sbx = user.Sandbox
	p.tightenSandbox(project.Sandbox, projectData)
	// The context policy is the person's (what a model holds, what they
	// pay for), not the repository's.
	p.ctx = user.Context
	if !isZeroContext(project.Context) {
		p.ignore(projectData, "context", "context: a project file cannot set the context window or the compaction threshold (only the user file can); left out")
	}
	// How many subagents run at once is the person's cost, too.
	p.subs = user.Subagents
	if project.Subagents != (Subagents{}) {
		p.ignore(projectData, "subagents", "subagents: a project file cannot set how many background subagents run at once (only the user file can); left out")
	}
	// What a model costs is the person's bill, not the repository's say.
	p.prices = user.Prices
	if len(project.Prices) > 0 {
		p.ignore(projectData, "prices", "prices: a project file cannot set model prices (only the user file can); left out")
	}
}

// tightenSandbox applies the project's sandbox section: it may turn the
// sandbox on and the network off, never loosen them; what would loosen
// is reported and left out. Writable paths come from the user only: one
// inside the project adds nothing (the session's directory is writable
// anyway), one outside it is reported.
func (p *Policy) tightenSandbox(ps Sandbox, data []byte) {
	if e := ps.Enabled; e != nil {
		if *e {
			p.sbx.Enabled = e
		} else {
			p.ignore(data, "enabled", "sandbox.enabled: a project file can turn the sandbox on, not off; left out")
		}
	}
	if n := ps.Network; n != nil {
		if !*n {
			p.sbx.Network = n
		} else {
			p.ignore(data, "network", "sandbox.network: a project file can cut the sandbox's network, not allow it; left out")
		}
	}
	for _, w := range ps.WritablePaths {
		if !insideDir(p.cwd, w) {
			p.ignore(data, w, fmt.Sprintf("sandbox.writablePaths: %q is outside the project; only the user file can make it writable; left out", w))
		}
	}
}

// insideDir reports whether path (relative ones are taken from dir) is
// dir or under it, lexically.
func insideDir(dir, path string) bool {
	if dir == "" {
		return false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ignore reports one setting of the project file left out; near is the
// JSON string to place it on a line.
func (p *Policy) ignore(data []byte, near, msg string) {
	p.ignored = append(p.ignored, &Error{Code: CodeIgnoredSetting, File: p.projectPath, Line: lineOf(data, near), Message: msg})
}

func isZeroContext(c Context) bool {
	return c.Window == 0 && c.CompactThreshold == 0 && len(c.Windows) == 0
}

// Decide returns the strongest rule matching c and its text.
func (p *Policy) Decide(c Call) (Decision, string) {
	if p == nil {
		return None, ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rules.decide(c)
}

// HasDeny reports whether any deny rule is in force (a search skips
// resolving each file's path when none is).
func (p *Policy) HasDeny() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.rules.deny) > 0
}

// UserPath is the user settings file ("" for none).
func (p *Policy) UserPath() string {
	if p == nil {
		return ""
	}
	return p.userPath
}

// Env is the merged env section.
func (p *Policy) Env() Env {
	if p == nil {
		return Env{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.env
}

// Sandbox is the merged sandbox section.
func (p *Policy) Sandbox() Sandbox {
	if p == nil {
		return Sandbox{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sbx
}

// Context is the context policy (user level only).
func (p *Policy) Context() Context {
	if p == nil {
		return Context{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// Subagents returns the person's subagent limits (user file only).
func (p *Policy) Subagents() Subagents {
	if p == nil {
		return Subagents{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.subs
}

// Prices returns the person's price overrides (user file only).
func (p *Policy) Prices() map[string]Price {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prices
}

// Ignored are the settings of the project file that were left out
// because a project may not make them, as *Error (CodeIgnoredSetting).
func (p *Policy) Ignored() []error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.ignored...)
}

// Problems are the settings files that were left out, as *Error.
func (p *Policy) Problems() []error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.problems...)
}

// CanSave reports whether SaveAllow has a user file to write to.
func (p *Policy) CanSave() bool { return p != nil && p.userPath != "" && p.cwd != "" }

// SaveAllow adds rule to the user file as an allow rule scoped to this
// project directory (an "always allow" answer), writes the file
// atomically and applies it. A user file that cannot be read is never
// overwritten, nor is one that is a symlink (ErrSymlinkedFile: replacing
// it would turn the link into a regular file). The read, the change and
// the replacement happen under a lock on the file's directory entry
// (lockFile), so concurrent saves, from this process or another, keep
// every rule.
func (p *Policy) SaveAllow(rule string) error {
	if _, err := ParseRule(rule); err != nil {
		return err
	}
	if p.userPath == "" {
		return errNoUserFile
	}
	if p.cwd == "" {
		return fmt.Errorf("no project directory to scope the rule to")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(p.userPath), 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(p.userPath + ".lock")
	if err != nil {
		return fmt.Errorf("not saved, the user settings file could not be locked: %w", err)
	}
	defer unlock()
	if info, err := os.Lstat(p.userPath); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s (add %q to its \"projects\" section by hand)", ErrSymlinkedFile, p.userPath, rule)
	}
	f, err := ReadFile(p.userPath)
	if err != nil {
		return fmt.Errorf("not saved, the user settings file is not usable: %w", err)
	}
	if f.Projects == nil {
		f.Projects = map[string]Permissions{}
	}
	dir := filepath.Clean(p.cwd)
	scoped := f.Projects[dir]
	for _, r := range scoped.Allow {
		if r == rule {
			return nil
		}
	}
	scoped.Allow = append(scoped.Allow, rule)
	f.Projects[dir] = scoped
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(p.userPath, append(data, '\n')); err != nil {
		return err
	}
	p.reload()
	return nil
}

// ErrSymlinkedFile: the user settings file is a symlink, which a save
// would replace by a regular file; the rule is not saved.
var ErrSymlinkedFile = errors.New("not saved, the user settings file is a symlink and is not replaced")

// writeAtomic replaces path (never a symlink: the caller checked, under
// the lock) by data through a synced temporary file in its directory,
// renamed over it (rename replaces the directory entry, it follows no
// link), then syncs the directory.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".settings-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
