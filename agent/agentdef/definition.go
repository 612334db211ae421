package agentdef

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/internal/levels"
)

// Format is the kind of file a definition was read from.
type Format string

// Formats, in precedence order.
const (
	FormatOurs   Format = "acp-agent"
	FormatClaude Format = "claude"
	FormatCodex  Format = "codex"
)

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
}

// Dirs lists the directories Load reads, in the order it reads them.
func (o Options) dirs() []dirSpec {
	var out []dirSpec
	if o.Cwd != "" {
		walk := levels.Down(o.GitRoot, o.Cwd)
		for i, dir := range walk {
			lvl := len(walk) - 1 - i
			out = append(out,
				dirSpec{filepath.Join(dir, ".acp-agent", "agents"), FormatOurs, ScopeProject, lvl},
				dirSpec{filepath.Join(dir, ".claude", "agents"), FormatClaude, ScopeProject, lvl},
				dirSpec{filepath.Join(dir, ".codex", "agents"), FormatCodex, ScopeProject, lvl})
		}
	}
	if o.ConfigHome != "" {
		out = append(out, dirSpec{filepath.Join(o.ConfigHome, "acp-agent", "agents"), FormatOurs, ScopeUser, 0})
	}
	if o.Home != "" {
		out = append(out,
			dirSpec{filepath.Join(o.Home, ".claude", "agents"), FormatClaude, ScopeUser, 0},
			dirSpec{filepath.Join(o.Home, ".codex", "agents"), FormatCodex, ScopeUser, 0})
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
	for _, d := range o.dirs() {
		if seen[d.dir] {
			continue // a cwd equal to $HOME, say
		}
		seen[d.dir] = true
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.ENOTDIR) {
				s.Problems = append(s.Problems, Problem{File: d.dir, Message: err.Error(), Skipped: true})
			}
			continue
		}
		ext := ".md"
		if d.format == FormatCodex {
			ext = ".toml"
		}
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
			var buf bytes.Buffer
			for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
				jobs[i].def, jobs[i].prob = readFile(jobs[i].path, jobs[i].spec.format, &buf)
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

// readFile reads and parses one file: one open and a read or two (no
// stat; a session start pays this for every definition).
func readFile(path string, f Format, buf *bytes.Buffer) (*Definition, []Problem) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, []Problem{{File: path, Message: err.Error(), Skipped: true}}
	}
	defer fh.Close()
	buf.Reset()
	_, err = buf.ReadFrom(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, []Problem{{File: path, Message: err.Error(), Skipped: true}}
	}
	if buf.Len() > MaxFileSize {
		return nil, []Problem{{File: path, Message: fmt.Sprintf("file is larger than %d bytes, the limit of a definition", MaxFileSize), Skipped: true}}
	}
	return Parse(path, f, buf.Bytes())
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
	switch f {
	case FormatOurs:
		return 0
	case FormatClaude:
		return 1
	}
	return 2
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
		return "ours wins over Claude Code's, Claude Code's over Codex's"
	default:
		return "the directory nearest the working directory wins"
	}
}
