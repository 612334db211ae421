package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/acp-agent/acp-agent/agent/policy"
)

// EscapeTitle makes s safe to show as one line: control characters
// (newlines included) and bidirectional formatting characters (which can
// make a title read differently from what runs) become visible \n, \t or
// \u{XXXX} escapes, so what the person reads is what the call contains.
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

// hiddenRune reports a control, bidi formatting or invalid rune.
func hiddenRune(r rune) bool {
	if r == unicode.ReplacementChar || unicode.IsControl(r) {
		return true
	}
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F, // ALM, LRM, RLM
		r >= 0x202A && r <= 0x202E, // LRE, RLE, PDF, LRO, RLO
		r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}

// CommandTitle is the title of a command's permission request: the exact
// command line, escaped, shortened with an ellipsis past max runes.
func CommandTitle(command string, max int) string {
	t := EscapeTitle(strings.TrimSpace(command))
	if r := []rune(t); len(r) > max {
		t = string(r[:max]) + "…"
	}
	return t
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
