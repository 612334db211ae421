package agentdef

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/internal/beneath"
	"github.com/acp-agent/acp-agent/internal/levels"
)

// Format is the kind of file a definition was read from.
type Format string

// Formats, in precedence order (Formats lists them).
const (
	FormatOurs     Format = "acp-agent"
	FormatClaude   Format = "claude"
	FormatCodex    Format = "codex"
	FormatGemini   Format = "gemini"
	FormatCursor   Format = "cursor"
	FormatCopilot  Format = "copilot"
	FormatOpencode Format = "opencode"
)

// Formats lists every format read, in precedence order: for one name and
// scope, a file of an earlier format wins.
var Formats = []Format{FormatOurs, FormatClaude, FormatCodex, FormatGemini, FormatCursor, FormatCopilot, FormatOpencode}

// formatInfo is where a format's files live and how they are named.
var formatInfo = map[Format]struct {
	// project is the folder below each project level; user the folder
	// below $HOME ("" when the format's user folder is elsewhere).
	project, user string
	// configUser is the user folder below the config directory
	// ($XDG_CONFIG_HOME), for the formats that keep it there.
	configUser string
	ext        string
	label      string
}{
	FormatOurs:     {project: ".acp-agent/agents", configUser: "acp-agent/agents", ext: ".md", label: "our"},
	FormatClaude:   {project: ".claude/agents", user: ".claude/agents", ext: ".md", label: "Claude Code's"},
	FormatCodex:    {project: ".codex/agents", user: ".codex/agents", ext: ".toml", label: "Codex's"},
	FormatGemini:   {project: ".gemini/agents", user: ".gemini/agents", ext: ".md", label: "Gemini CLI's"},
	FormatCursor:   {project: ".cursor/agents", user: ".cursor/agents", ext: ".md", label: "Cursor's"},
	FormatCopilot:  {project: ".github/agents", user: ".copilot/agents", ext: ".agent.md", label: "Copilot's"},
	FormatOpencode: {project: ".opencode/agents", configUser: "opencode/agents", ext: ".md", label: "opencode's"},
}

// Scope is where a definition was found.
type Scope string

// Scopes, in precedence order.
const (
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
)

// Mode is how a child of a definition runs.
type Mode string

// Modes.
const (
	// ModeBackground is a continuable child that runs in the background
	// (the default).
	ModeBackground Mode = "background"
	// ModeForeground is a one-shot child the delegating call waits for.
	ModeForeground Mode = "foreground"
)

// Isolation values.
const (
	IsolationNone     = "none"
	IsolationWorktree = "worktree"
)

// Permission modes (the session modes' ids).
const (
	PermissionDefault     = "default"
	PermissionAcceptEdits = "accept-edits"
	PermissionPlan        = "plan"
	PermissionBypass      = "bypass"
)

// Definition is one parsed agent definition.
type Definition struct {
	// Name is what the model passes as the subagent tool's agent.
	Name        string
	Description string
	// Tools is the allow list (nil: every tool the child would have);
	// DisallowedTools the deny list (nil: none). Names are ours.
	Tools           []string
	DisallowedTools []string
	// Model is a PROVIDER/MODEL route; "" inherits the parent's model.
	Model string
	// Mode is ModeBackground or ModeForeground.
	Mode Mode
	// PermissionMode is a session mode id, "" to follow the session.
	PermissionMode string
	// MaxTurns bounds the model requests of each of the child's turns
	// (0: the runtime's default).
	MaxTurns int
	// MaxTokens and MaxCostUSD bound what the child may spend over its
	// whole life (tokens in and out; USD at list prices), Timeout the wall
	// time of each of its turns (0: no limit).
	MaxTokens  int
	MaxCostUSD float64
	Timeout    time.Duration
	// Isolation is IsolationNone or IsolationWorktree.
	Isolation string
	// Instructions is the body: the child's persona.
	Instructions string
	// Skills are the names of skills whose bodies are preloaded into
	// the child's prompt (ours and Claude Code's "skills" key).
	Skills []string
	// External, when set, makes the definition an external agent: the
	// child runs this command as an ACP agent instead of a model of ours
	// (Model, Tools, DisallowedTools and MaxTurns are then absent).
	External *External

	// File is the absolute path it was read from; Line the line of its
	// name (1 when the name came from the file name).
	File   string
	Line   int
	Format Format
	Scope  Scope
	// Hash is "sha256:" and the hex digest of the file's bytes: what a
	// child records, so a later change of the file is visible.
	Hash string
	// Changed is the file's status change time (ctime: set by the kernel
	// on every write, rename or link, and not settable by the writer), or
	// zero when unknown. A definition changed after the agent started may
	// have been written by the model in this session (WrittenSince).
	Changed time.Time

	level int // project: distance from the cwd (0 = cwd); user: 0
}

// Problem is something reported about a file: malformed (Skipped), a
// duplicate or a shadowed definition (Skipped), or a field that could not
// be mapped (the definition is kept).
type Problem struct {
	File    string
	Line    int // 1-based; 0 when unknown
	Message string
	Skipped bool
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Set is the definitions in force for one directory, by name, and what
// was reported while loading them.
type Set struct {
	// Defs are the winning definitions, sorted by name.
	Defs     []*Definition
	Problems []Problem
}

// Get returns the definition named name.
func (s *Set) Get(name string) (*Definition, bool) {
	if s == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(s.Defs, name, func(d *Definition, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return nil, false
	}
	return s.Defs[i], true
}

// Names returns the definitions' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Defs))
	for i, d := range s.Defs {
		out[i] = d.Name
	}
	return out
}

// Len is the number of definitions.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Defs)
}

// Options say where to look.
type Options struct {
	// Cwd is the session's working directory; GitRoot the top of the walk
	// ("" means Cwd only).
	Cwd, GitRoot string
	// ConfigHome is $XDG_CONFIG_HOME (or ~/.config); Home is $HOME (for
	// ~/.claude and ~/.codex). "" skips them.
	ConfigHome, Home string
}

// UserOptions fills ConfigHome and Home from the environment.
func UserOptions(cwd, gitRoot string, getenv func(string) string) Options {
	o := Options{Cwd: cwd, GitRoot: gitRoot, Home: getenv("HOME"), ConfigHome: getenv("XDG_CONFIG_HOME")}
	if o.ConfigHome == "" && o.Home != "" {
		o.ConfigHome = filepath.Join(o.Home, ".config")
	}
	return o
}

// MaxFileSize bounds one definition file; a larger one is reported.
const MaxFileSize = 256 << 10

// dirSpec is one directory to read, and how.
type dirSpec struct {
	dir    string
	format Format
	scope  Scope
	level  int
	// anchor is the directory the reads stay beneath (package
	// beneath): the top of the project walk, so a definition symlinked
	// out of the repository is refused; UserAnchor for the person's own
	// folders, whose files may link anywhere (a dotfiles checkout, a
	// package manager's store).
	anchor string
}

// UserAnchor is the anchor of the person's own folders: none
// (beneath.Anywhere), so only the project's files are held beneath a
// root.
const UserAnchor = beneath.Anywhere

// Dirs lists the directories Load reads, in the order it reads them.
func (o Options) dirs() []dirSpec {
	var out []dirSpec
	if o.Cwd != "" {
		walk := levels.Down(o.GitRoot, o.Cwd)
		for i, dir := range walk {
			lvl := len(walk) - 1 - i
			for _, f := range Formats {
				out = append(out, dirSpec{filepath.Join(dir, filepath.FromSlash(formatInfo[f].project)), f, ScopeProject, lvl, walk[0]})
			}
		}
	}
	for _, f := range Formats {
		info := formatInfo[f]
		var dir string
		switch {
		case info.configUser != "" && o.ConfigHome != "":
			dir = filepath.Join(o.ConfigHome, filepath.FromSlash(info.configUser))
		case info.user != "" && o.Home != "":
			dir = filepath.Join(o.Home, filepath.FromSlash(info.user))
		default:
			continue
		}
		out = append(out, dirSpec{dir, f, ScopeUser, 0, UserAnchor})
	}
	return out
}

// Dirs returns the directories Load looks in, in reading order.
func (o Options) Dirs() []string {
	var out []string
	for _, d := range o.dirs() {
		out = append(out, d.dir)
	}
	return out
}

// Load reads every definition the options reach and resolves precedence.
// It never fails: what cannot be used is in Problems. Files are parsed on
// up to GOMAXPROCS goroutines, which Load starts and waits for; the
// result does not depend on their order.
func Load(o Options) *Set {
	s := &Set{}
	type job struct {
		path string
		spec dirSpec
		def  *Definition
		prob []Problem
	}
	var jobs []job
	seen := map[string]bool{}
	roots := beneath.NewRoots()
	defer roots.Close()
	for _, d := range o.dirs() {
		if seen[d.dir] {
			continue // a cwd equal to $HOME, say
		}
		seen[d.dir] = true
		entries, err := roots.ReadDir(d.anchor, d.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.ENOTDIR) {
				s.Problems = append(s.Problems, Problem{File: d.dir, Message: "not read: " + err.Error(), Skipped: true})
			}
			continue
		}
		ext := formatInfo[d.format].ext
		for _, e := range entries {
			if !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
				continue // a directory, a device, a socket
			}
			if !strings.HasSuffix(e.Name(), ext) || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			jobs = append(jobs, job{path: filepath.Join(d.dir, e.Name()), spec: d})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (len(jobs)+15)/16)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf []byte
			for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
				jobs[i].def, jobs[i].prob = readFile(roots, jobs[i].spec.anchor, jobs[i].path, jobs[i].spec.format, &buf)
			}
		})
	}
	wg.Wait()
	var all []*Definition
	for _, j := range jobs {
		s.Problems = append(s.Problems, j.prob...)
		if j.def != nil {
			j.def.Scope, j.def.level = j.spec.scope, j.spec.level
			all = append(all, j.def)
		}
	}
	s.Defs, s.Problems = resolve(all, s.Problems)
	return s
}

// readFile reads and parses one file beneath anchor: one open and a read
// or two (a session start pays this for every definition). A symlink
// leading out of the anchor is refused, not followed.
func readFile(roots *beneath.Roots, anchor, path string, f Format, buf *[]byte) (*Definition, []Problem) {
	data, err := roots.ReadFile(anchor, path, MaxFileSize, *buf)
	var tl *beneath.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, []Problem{{File: path, Message: fmt.Sprintf("file is larger than %d bytes, the limit of a definition", MaxFileSize), Skipped: true}}
	case err != nil:
		return nil, []Problem{{File: path, Message: "not read: " + err.Error(), Skipped: true}}
	}
	*buf = data
	d, probs := Parse(path, f, data)
	if d != nil {
		if fi, err := roots.Stat(anchor, path); err == nil {
			d.Changed = changeTime(fi)
		}
	}
	return d, probs
}

// Parse parses one file's content in format f. A nil definition means the
// file was skipped; the problems say why (and what was not mapped).
func Parse(path string, f Format, data []byte) (*Definition, []Problem) {
	var (
		def   *Definition
		probs []Problem
	)
	switch f {
	case FormatCodex:
		def, probs = parseCodex(path, data)
	case FormatGemini:
		def, probs = parseGemini(path, data)
	case FormatCursor:
		def, probs = parseCursor(path, data)
	case FormatCopilot:
		def, probs = parseCopilot(path, data)
	case FormatOpencode:
		def, probs = parseOpencode(path, data)
	default:
		def, probs = parseMarkdown(path, f, data)
	}
	if def == nil {
		return nil, probs
	}
	def.File, def.Format = path, f
	sum := sha256.Sum256(data)
	def.Hash = "sha256:" + hex.EncodeToString(sum[:])
	if def.Mode == "" {
		def.Mode = ModeBackground
	}
	if def.Isolation == "" {
		def.Isolation = IsolationNone
	}
	return def, probs
}

// rank orders the candidates of one name: best first.
func rank(a, b *Definition) int {
	return cmp.Or(
		cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)),
		cmp.Compare(formatRank(a.Format), formatRank(b.Format)),
		cmp.Compare(a.level, b.level),
		strings.Compare(a.File, b.File),
	)
}

func scopeRank(s Scope) int {
	if s == ScopeProject {
		return 0
	}
	return 1
}

func formatRank(f Format) int {
	if i := slices.Index(Formats, f); i >= 0 {
		return i
	}
	return len(Formats)
}

// resolve keeps the best definition of each name and reports the others.
func resolve(all []*Definition, probs []Problem) ([]*Definition, []Problem) {
	slices.SortStableFunc(all, func(a, b *Definition) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), rank(a, b))
	})
	var out []*Definition
	for _, d := range all {
		if n := len(out); n > 0 && out[n-1].Name == d.Name {
			win := out[n-1]
			msg := fmt.Sprintf("agent %q is shadowed by %s (%s)", d.Name, win.File, why(win, d))
			if win.Scope == d.Scope && win.Format == d.Format && win.level == d.level {
				msg = fmt.Sprintf("duplicate agent %q: also defined in %s, which is used", d.Name, win.File)
			}
			probs = append(probs, Problem{File: d.File, Line: d.Line, Message: msg, Skipped: true})
			continue
		}
		out = append(out, d)
	}
	return out, probs
}

func why(win, lose *Definition) string {
	switch {
	case win.Scope != lose.Scope:
		return "a project definition wins over a user one"
	case win.Format != lose.Format:
		return fmt.Sprintf("%s format ranks before %s; the order is ours, Claude Code, Codex, Gemini CLI, Cursor, Copilot, opencode",
			formatInfo[win.Format].label, formatInfo[lose.Format].label)
	default:
		return "the directory nearest the working directory wins"
	}
}

// WrittenSince reports whether d's file may have been written at or after
// start (its change time is not before it, or unknown): by the model in
// this session, say, through a tool call or a command. A definition that
// widens rights is not taken from such a file.
func (d *Definition) WrittenSince(start time.Time) bool {
	return d.Changed.IsZero() || !d.Changed.Before(start)
}
