package workspace

import (
	"fmt"
	"strings"
	"unicode"
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
