package skill

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/internal/beneath"
	"github.com/acp-agent/acp-agent/internal/levels"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits of the format (Agent Skills) and of this reader.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
	// MaxFileSize bounds one SKILL.md; a larger one is reported.
	MaxFileSize = 256 << 10
)

// Scope is where a skill was found.
type Scope = agentdef.Scope

// Problem is something reported about a skill file.
type Problem = agentdef.Problem

// Source is the kind of folder a skill was read from, in precedence
// order (Sources).
type Source string

// Sources.
const (
	SourceOurs   Source = "acp-agent"
	SourceClaude Source = "claude"
	SourceAgents Source = "agents"
)

// Sources lists the folders read, in precedence order.
var Sources = []Source{SourceOurs, SourceClaude, SourceAgents}

var sourceDirs = map[Source]struct{ project, user, configUser string }{
	SourceOurs:   {project: ".acp-agent/skills", configUser: "acp-agent/skills"},
	SourceClaude: {project: ".claude/skills", user: ".claude/skills"},
	SourceAgents: {project: ".agents/skills", user: ".agents/skills"},
}

// Skill is one parsed skill.
type Skill struct {
	Name        string
	Description string
	// Body is SKILL.md after its frontmatter: what loading the skill
	// gives the model. BodyLine is its first line in the file.
	Body     string
	BodyLine int
	// AllowedTools is the frontmatter's allowed-tools, as written (it is
	// reported, not enforced: the gate decides every call).
	AllowedTools []string
	// Dir is the skill's folder and File its SKILL.md (absolute); Line
	// the line of its name.
	Dir, File string
	Line      int
	Scope     Scope
	Source    Source
	// Hash is "sha256:" and the hex digest of SKILL.md's bytes.
	Hash string
	// Anchor is the directory the skill's files are read beneath.
	Anchor string

	level int
}

// Set is the skills in force for one directory and what was reported.
type Set struct {
	// Skills are the winners, sorted by name.
	Skills   []*Skill
	Problems []Problem
}

// Get returns the skill named name.
func (s *Set) Get(name string) (*Skill, bool) {
	if s == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(s.Skills, name, func(k *Skill, n string) int { return strings.Compare(k.Name, n) })
	if !ok {
		return nil, false
	}
	return s.Skills[i], true
}

// Len is the number of skills.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Skills)
}

// Names returns the skills' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Skills))
	for i, k := range s.Skills {
		out[i] = k.Name
	}
	return out
}

// Options say where to look (as agentdef.Options).
type Options = agentdef.Options

type dirSpec struct {
	dir    string
	source Source
	scope  Scope
	level  int
	anchor string
}

func dirs(o Options) []dirSpec {
	var out []dirSpec
	if o.Cwd != "" {
		walk := levels.Down(o.GitRoot, o.Cwd)
		for i, dir := range walk {
			for _, src := range Sources {
				out = append(out, dirSpec{filepath.Join(dir, filepath.FromSlash(sourceDirs[src].project)), src, agentdef.ScopeProject, len(walk) - 1 - i, walk[0]})
			}
		}
	}
	for _, src := range Sources {
		d := sourceDirs[src]
		var dir string
		switch {
		case d.configUser != "" && o.ConfigHome != "":
			dir = filepath.Join(o.ConfigHome, filepath.FromSlash(d.configUser))
		case d.user != "" && o.Home != "":
			dir = filepath.Join(o.Home, filepath.FromSlash(d.user))
		default:
			continue
		}
		out = append(out, dirSpec{dir, src, agentdef.ScopeUser, 0, agentdef.UserAnchor})
	}
	return out
}

// Dirs returns the folders Load looks in, in reading order.
func Dirs(o Options) []string {
	var out []string
	for _, d := range dirs(o) {
		out = append(out, d.dir)
	}
	return out
}

// Load reads every skill the options reach (each <folder>/<name>/SKILL.md)
// and resolves precedence. It never fails: what cannot be used is in
// Problems.
func Load(o Options) *Set {
	s := &Set{}
	roots := beneath.NewRoots()
	defer roots.Close()
	seen := map[string]bool{}
	var all []*Skill
	var buf []byte
	for _, d := range dirs(o) {
		if seen[d.dir] {
			continue
		}
		seen[d.dir] = true
		entries, err := roots.ReadDir(d.anchor, d.dir)
		if err != nil {
			if !quiet(err) {
				s.Problems = append(s.Problems, Problem{File: d.dir, Message: "not read: " + err.Error(), Skipped: true})
			}
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0) {
				continue
			}
			file := filepath.Join(d.dir, e.Name(), FileName)
			data, err := roots.ReadFile(d.anchor, file, MaxFileSize, buf)
			var tl *beneath.TooLargeError
			switch {
			case errors.As(err, &tl):
				s.Problems = append(s.Problems, Problem{File: file, Message: fmt.Sprintf("file is larger than %d bytes, the limit of a skill", MaxFileSize), Skipped: true})
				continue
			case err != nil && errors.Is(err, fs.ErrNotExist):
				continue // a folder that is not a skill
			case err != nil:
				s.Problems = append(s.Problems, Problem{File: file, Message: "not read: " + err.Error(), Skipped: true})
				continue
			}
			buf = data
			k, probs := Parse(file, data)
			s.Problems = append(s.Problems, probs...)
			if k != nil {
				k.Scope, k.Source, k.level, k.Anchor = d.scope, d.source, d.level, d.anchor
				all = append(all, k)
			}
		}
	}
	s.Skills, s.Problems = resolve(all, s.Problems)
	return s
}

func quiet(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR)
}

// namePattern is the format's name: lowercase letters, digits and single
// hyphens, not at either end.
var namePattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// CheckName reports whether name is a valid skill name.
func CheckName(name string) error {
	if len(name) > MaxNameLen || !namePattern.MatchString(name) {
		return fmt.Errorf("name %q must be 1 to %d lowercase letters, digits and single hyphens, not starting or ending with one", name, MaxNameLen)
	}
	return nil
}

// known are the frontmatter keys the format (and Claude Code) define that
// this reader accepts without a report.
var known = map[string]bool{"license": true, "compatibility": true, "metadata": true}

// Parse parses one SKILL.md (path is its absolute path; the folder's name
// must be the skill's name). A nil skill means it was skipped; the
// problems say why, and what was not used.
func Parse(path string, data []byte) (*Skill, []Problem) {
	skip := func(line int, format string, args ...any) (*Skill, []Problem) {
		return nil, []Problem{{File: path, Line: line, Message: fmt.Sprintf(format, args...), Skipped: true}}
	}
	if !utf8.Valid(data) {
		return skip(1, "SKILL.md is not valid UTF-8 text")
	}
	fm, err := agentdef.SplitFrontmatter(data)
	if err != nil {
		var fe *agentdef.FrontmatterError
		if errors.As(err, &fe) {
			return skip(fe.Line, "%s", fe.Message)
		}
		return skip(1, "%v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(fm.YAML, &doc); err != nil {
		line, msg := yamlErrorLine(err, fm.Line)
		return skip(line, "frontmatter is not valid YAML: %s", msg)
	}
	if len(doc.Content) == 0 {
		return skip(fm.Line, "the frontmatter is empty (it needs a name and a description)")
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return skip(fm.Line+m.Line-1, "the frontmatter must be a mapping of keys to values")
	}
	k := &Skill{File: path, Dir: filepath.Dir(path), Body: strings.TrimSpace(string(fm.Body)), BodyLine: fm.BodyLine}
	var notes []Problem
	seen := map[string]int{}
	descLine := 0
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		line := fm.Line + key.Line - 1
		if key.Kind != yaml.ScalarNode {
			return skip(line, "a frontmatter key must be a plain name")
		}
		if first, dup := seen[key.Value]; dup {
			return skip(line, "key %q appears twice (first on line %d)", key.Value, first)
		}
		seen[key.Value] = line
		note, err := k.applyKey(key.Value, val, line, &descLine)
		if err != nil {
			return skip(line, "%v", err)
		}
		if note != "" {
			notes = append(notes, Problem{File: path, Line: line, Message: note})
		}
	}
	if k.Name == "" {
		return skip(fm.Line, "name is missing (a skill needs a name and a description)")
	}
	if k.Description == "" {
		return skip(max(descLine, fm.Line), "description is missing or empty (the model picks a skill by its description)")
	}
	if dir := filepath.Base(k.Dir); dir != k.Name {
		return skip(k.Line, "name %q differs from its folder's name %q (they must be the same)", k.Name, dir)
	}
	sum := sha256.Sum256(data)
	k.Hash = "sha256:" + hex.EncodeToString(sum[:])
	return k, notes
}

// applyKey sets frontmatter key (its value val, on line) on k. It
// returns a note for a key that is read but not enforced or not used, or
// the error that skips the skill.
func (k *Skill) applyKey(key string, val *yaml.Node, line int, descLine *int) (note string, err error) {
	str := func() (string, bool) {
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			return "", false
		}
		return val.Value, true
	}
	switch key {
	case "name":
		n, ok := str()
		if !ok {
			return "", errors.New("name must be a string")
		}
		if err := CheckName(n); err != nil {
			return "", err
		}
		k.Name, k.Line = n, line
	case "description":
		d, ok := str()
		if !ok {
			return "", errors.New("description must be a string")
		}
		k.Description, *descLine = strings.TrimSpace(d), line
		if utf8.RuneCountInString(k.Description) > MaxDescriptionLen {
			return "", fmt.Errorf("description is longer than %d characters", MaxDescriptionLen)
		}
	case "allowed-tools":
		switch val.Kind {
		case yaml.ScalarNode:
			k.AllowedTools = strings.Fields(strings.ReplaceAll(val.Value, ",", " "))
		case yaml.SequenceNode:
			for _, it := range val.Content {
				k.AllowedTools = append(k.AllowedTools, it.Value)
			}
		default:
			return "", errors.New("allowed-tools must be a list of tools")
		}
		return "allowed-tools is not enforced: every call still goes through the session's permission gate", nil
	default:
		if !known[key] {
			return fmt.Sprintf("key %q is not used: ignored", key), nil
		}
	}
	return "", nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlErrorLine finds the file line a YAML error names.
func yamlErrorLine(err error, first int) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		var n int
		if _, serr := fmt.Sscanf(msg[m[2]:m[3]], "%d", &n); serr == nil {
			return first + n - 1, strings.TrimPrefix(strings.TrimSpace(msg[m[1]:]), ": ")
		}
	}
	return first, msg
}

func rank(a, b *Skill) int {
	return cmp.Or(
		cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)),
		cmp.Compare(slices.Index(Sources, a.Source), slices.Index(Sources, b.Source)),
		cmp.Compare(a.level, b.level),
		strings.Compare(a.File, b.File),
	)
}

func scopeRank(s Scope) int {
	if s == agentdef.ScopeProject {
		return 0
	}
	return 1
}

func resolve(all []*Skill, probs []Problem) ([]*Skill, []Problem) {
	slices.SortStableFunc(all, func(a, b *Skill) int { return cmp.Or(strings.Compare(a.Name, b.Name), rank(a, b)) })
	var out []*Skill
	for _, k := range all {
		if n := len(out); n > 0 && out[n-1].Name == k.Name {
			win := out[n-1]
			why := "the directory nearest the working directory wins"
			switch {
			case win.Scope != k.Scope:
				why = "a project skill wins over a user one"
			case win.Source != k.Source:
				why = "the order is .acp-agent/skills, .claude/skills, .agents/skills"
			}
			probs = append(probs, Problem{File: k.File, Line: k.Line, Skipped: true,
				Message: fmt.Sprintf("skill %q is shadowed by %s (%s)", k.Name, win.File, why)})
			continue
		}
		out = append(out, k)
	}
	return out, probs
}

// MaxListedFiles caps the files Files lists.
const MaxListedFiles = 200

// Files lists the files of k's folder (relative to it, sorted, SKILL.md
// included), read beneath k's anchor: at most MaxListedFiles, more
// reporting true. A folder or file leading out of the anchor is left
// out.
func Files(k *Skill) ([]string, bool, error) {
	roots := beneath.NewRoots()
	defer roots.Close()
	anchor := k.Anchor
	if anchor == "" {
		anchor = k.Dir
	}
	var out []string
	more := false
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		entries, err := roots.ReadDir(anchor, filepath.Join(k.Dir, rel))
		if err != nil {
			if rel == "" {
				return err
			}
			return nil // a subfolder that leads out, or vanished
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(rel, e.Name())
			info, err := roots.Stat(anchor, filepath.Join(k.Dir, p))
			if err != nil {
				continue // a symlink leading out
			}
			if info.IsDir() {
				if depth < 4 {
					if err := walk(p, depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if !info.Mode().IsRegular() {
				continue
			}
			if len(out) == MaxListedFiles {
				more = true
				return nil
			}
			out = append(out, filepath.ToSlash(p))
		}
		return nil
	}
	if err := walk("", 0); err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// Preload renders the bodies of skills for a child's prompt (an agent
// definition's skills:), in the order given.
func Preload(skills []*Skill) string {
	var b strings.Builder
	for _, k := range skills {
		if b.Len() == 0 {
			b.WriteString("Skills preloaded by your agent definition (follow them where they apply; their files are in each folder):\n")
		}
		fmt.Fprintf(&b, "\n<skill name=%q folder=%q>\n%s\n</skill>\n", k.Name, k.Dir, k.Body)
	}
	return strings.TrimSpace(b.String())
}
