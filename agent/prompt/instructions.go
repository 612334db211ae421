package prompt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/internal/levels"
)

// DefaultInstructionsCap bounds the project instructions in bytes, over
// all files: instructions must not crowd out the conversation.
const DefaultInstructionsCap = 32 << 10

// Instruction is one instructions file as it enters the prompt.
type Instruction struct {
	// Path is absolute; Scope says where it applies ("user" or "project").
	Path  string
	Scope string
	Text  string
	// Cut is the number of bytes left out to respect the cap.
	Cut int
	// Skipped, when set, says why the file was not read (Text is empty):
	// a project file that resolves outside the repository and the user's
	// config directory (a symlink a cloned repository planted).
	Skipped string
	// size is the file's size in bytes (Text may hold less of it).
	size int
}

// InstructionOptions say where to look.
type InstructionOptions struct {
	Cwd string
	// GitRoot is the top of the walk; "" means only Cwd itself.
	GitRoot string
	// UserFile is the user's instructions file ("" for none).
	UserFile string
	// Cap bounds the total bytes; 0 means DefaultInstructionsCap.
	Cap int
}

// Instruction file names, in order of preference at one level.
const (
	AgentsFile = "AGENTS.md"
	ClaudeFile = "CLAUDE.md"
)

// UserInstructionsFile returns $XDG_CONFIG_HOME/acp-agent/AGENTS.md (or
// ~/.config/... when XDG_CONFIG_HOME is unset), "" when neither is known.
func UserInstructionsFile(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "acp-agent", AgentsFile)
}

// LoadInstructions reads the user's file, then one file per directory
// from the git root down to cwd (AGENTS.md, else CLAUDE.md), so the
// nearest comes last and wins where they disagree. Files that cannot be
// read are skipped. When the total exceeds the cap, the farthest files
// are cut first (the nearest are the most specific), each cut file keeps
// its head and records how much was left out.
func LoadInstructions(o InstructionOptions) []Instruction {
	limit := o.Cap
	if limit <= 0 {
		limit = DefaultInstructionsCap
	}
	var out []Instruction
	if o.UserFile != "" {
		if text, size, ok := readText(o.UserFile, limit); ok {
			out = append(out, Instruction{Path: o.UserFile, Scope: "user", Text: text, size: size})
		}
	}
	var dirs []string
	if o.Cwd != "" {
		dirs = levels.Down(o.GitRoot, o.Cwd)
	}
	allowed := allowedRoots(o)
	for _, dir := range dirs {
		for _, name := range []string{AgentsFile, ClaudeFile} {
			p := filepath.Join(dir, name)
			if real, err := filepath.EvalSymlinks(p); err == nil && !withinAny(allowed, real) {
				out = append(out, Instruction{Path: p, Scope: "project", Skipped: fmt.Sprintf(
					"it resolves to %s, outside the repository and the user's config directory", real)})
				continue
			}
			if text, size, ok := readText(p, limit); ok {
				out = append(out, Instruction{Path: p, Scope: "project", Text: text, size: size})
				break
			}
		}
	}
	applyCap(out, limit)
	return out
}

// allowedRoots are where a project instructions file may resolve: the
// repository (the git root, else the cwd) and the user's config
// directory (the one holding the acp-agent directory of UserFile), each
// with symlinks resolved.
func allowedRoots(o InstructionOptions) []string {
	var out []string
	top := o.GitRoot
	if top == "" {
		top = o.Cwd
	}
	if o.UserFile != "" {
		out = append(out, filepath.Dir(filepath.Dir(o.UserFile)))
	}
	if top != "" {
		out = append(out, top)
	}
	for i, d := range out {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			out[i] = r
		} else {
			out[i] = filepath.Clean(d)
		}
	}
	return out
}

func withinAny(dirs []string, p string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// readText reads at most limit bytes of a regular file (a device or a
// directory is skipped) and returns them trimmed, with the trimmed size
// of the whole file as far as it is known. ok is false for missing,
// unreadable or empty files.
func readText(path string, limit int) (string, int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", 0, false
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil && !errors.Is(err, io.EOF) {
		return "", 0, false
	}
	s := strings.TrimSpace(string(b))
	size := len(s)
	if int64(len(b)) < st.Size() {
		// Cut at read time: count the rest of the file as left out.
		size += int(st.Size()) - len(b)
	}
	return s, size, s != ""
}

// applyCap trims the instructions in place, farthest first, until the
// total fits in limit; the nearest file is cut last.
func applyCap(ins []Instruction, limit int) {
	total := 0
	for i, in := range ins {
		total += len(in.Text)
		ins[i].Cut = in.size - len(in.Text)
	}
	// Order of cutting: user file first, then project files from the root
	// down, so the nearest (last) keeps the most.
	for i := 0; i < len(ins) && total > limit; i++ {
		over := total - limit
		keep := len(ins[i].Text) - over
		if keep < 0 {
			keep = 0
		}
		cut := truncateUTF8(ins[i].Text, keep)
		total -= len(ins[i].Text) - len(cut)
		ins[i].Cut = ins[i].size - len(cut)
		ins[i].Text = cut
	}
}

// truncateUTF8 returns the longest prefix of s of at most n bytes that
// ends on a rune boundary.
func truncateUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
