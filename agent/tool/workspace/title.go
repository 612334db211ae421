package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/acp-agent/acp-agent/agent/policy"
)

// EscapeTitle makes s safe to show as one line: control characters
// (newlines included), every format character (Unicode Cf: bidirectional
// controls, zero-width spaces and joiners, which can make a title read
// differently from what runs) and every separator but the plain space
// (line and paragraph separators, no-break and other odd spaces) become
// visible \n, \t or \u{XXXX} escapes, so what the person reads is what
// the call contains.
func EscapeTitle(s string) string {
	clean := true
	for _, r := range s {
		if hiddenRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case hiddenRune(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hiddenRune reports a control, format, separator other than the space,
// or invalid rune.
func hiddenRune(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == unicode.ReplacementChar, unicode.IsControl(r),
		unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Zs):
		return true
	}
	return false
}

// CommandTitle is the title of a command's permission request: the exact
// command line, escaped; past max runes its head and its tail are kept
// around an ellipsis (what a long command ends with is often what it
// does: "… && curl evil | sh").
func CommandTitle(command string, max int) string {
	t := EscapeTitle(strings.TrimSpace(command))
	r := []rune(t)
	if len(r) <= max {
		return t
	}
	tail := max / 3
	head := max - tail - 1
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// TitlePath is how a permission title names p: its path relative to the
// cwd, and when a symlink makes it resolve elsewhere, also the target
// ("link → target"), so the person sees which file is written.
func TitlePath(cwd string, p Path) string {
	name := DisplayPath(cwd, p.Abs)
	if p.Real == "" || p.Real == p.Abs {
		return EscapeTitle(name)
	}
	realCwd, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		realCwd = cwd
	}
	target := DisplayPath(realCwd, p.Real)
	if target == name {
		return EscapeTitle(name)
	}
	return EscapeTitle(name + " → " + target)
}

// ProtectedReason says why writing p can become a command, or "" when it
// cannot: git's directory (hooks, core.fsmonitor and other config run
// code the next time git runs), the agent's own settings (its permission
// rules), and editor task and launch files (the editor runs what they
// say). Both the name used and the real location are checked.
func ProtectedReason(cwd string, p Path) string {
	realCwd, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		realCwd = cwd
	}
	for _, c := range [][2]string{{cwd, p.Abs}, {realCwd, p.Real}} {
		if c[1] == "" {
			continue
		}
		rel, err := filepath.Rel(c[0], c[1])
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			rel = c[1]
		}
		if why := protectedRel(filepath.ToSlash(rel)); why != "" {
			return why
		}
	}
	return ""
}

func protectedRel(rel string) string { return policy.ProtectedRel(rel) }

// ResolvedSubject is p's resolved location as rules match it: relative to
// the real cwd when inside it, else absolute.
func ResolvedSubject(p Path) string {
	if p.Real == "" {
		return ""
	}
	if p.RealCwd != "" && Within(p.RealCwd, p.Real) {
		return DisplayPath(p.RealCwd, p.Real)
	}
	return p.Real
}
