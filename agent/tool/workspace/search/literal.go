package search

import (
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// requiredLiteral returns a literal every match of expr must contain,
// as UTF-8 bytes, or nil when none is known. grep searches lines for it
// with bytes.Index and runs the regexp only on the lines holding it.
// Only case-sensitive literals qualify (a case-folded literal is one
// only if none of its runes has other cases).
func requiredLiteral(expr string) []byte {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	lit := required(re.Simplify())
	if len(lit) == 0 {
		return nil
	}
	var b []byte
	for _, r := range lit {
		if r == utf8.RuneError || r < 0 || r > unicode.MaxRune {
			return nil // U+FFFD also matches invalid UTF-8
		}
		b = utf8.AppendRune(b, r)
	}
	return b
}

// required returns the longest literal that must appear in every match
// of re.
func required(re *syntax.Regexp) []rune {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			for _, r := range re.Rune {
				if unicode.SimpleFold(r) != r {
					return nil
				}
			}
		}
		return re.Rune
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []rune
		for _, sub := range re.Sub {
			if lit := required(sub); len(lit) > len(best) {
				best = lit
			}
		}
		return best
	}
	return nil
}
