package search

import (
	"slices"
	"strings"
)

// ignoreRule is one parsed line of an ignore file, with git's semantics
// (gitignore(5), dir.c): a leading "!" negates, a trailing "/" matches
// directories only, a pattern without a slash (other than a trailing
// one) matches the base name at any depth, any other is anchored to the
// directory of its file.
type ignoreRule struct {
	// pattern is matched with wildmatch; an anchored pattern has its
	// leading "/" removed.
	pattern  string
	negate   bool
	dirOnly  bool
	basename bool
}

// parseIgnoreLine parses one line (terminator removed) of an ignore file;
// ok is false for blank lines and comments.
func parseIgnoreLine(line string) (r ignoreRule, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return r, false
	}
	line = trimTrailingSpaces(line)
	if line == "" {
		return r, false
	}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return r, false
	}
	r.basename = !strings.Contains(line, "/")
	if !r.basename {
		line = strings.TrimPrefix(line, "/")
	}
	r.pattern = line
	return r, true
}

// trimTrailingSpaces removes unescaped trailing spaces, as git's
// trim_trailing_spaces does (tabs stay; "\ " keeps the space).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// hasWildcard reports whether p needs wildmatch (git's no_wildcard test:
// a backslash counts, as it escapes).
func hasWildcard(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// ruleSet is the rules of one ignore file compiled into one matcher:
// literal base names and anchored literal paths are map lookups,
// "*.ext" and "*suffix" patterns are an extension map and a suffix
// table, and only the remaining patterns run wildmatch. Every table
// holds rule indices in descending order, so a lookup yields the last
// (deciding) matching rule of its kind and the general patterns are only
// tried above the best index found so far. A ruleSet is immutable after
// compileRules and shared by every directory below its file.
type ruleSet struct {
	// base is the set's directory relative to the domain root
	// (slash-separated, "" for the root); anchored patterns match paths
	// relative to it.
	base     string
	rules    []ignoreRule
	names    map[string][]int32 // literal base names
	paths    map[string][]int32 // literal anchored paths
	exts     map[string][]int32 // "*.ext" by ".ext"
	suffixes []int32            // other "*literal" base-name patterns
	general  []int32            // everything else
	// anchored is set when some rule needs the entry's relative path.
	anchored bool
}

// compileRules compiles rules (in file order) found in the directory base.
func compileRules(base string, rules []ignoreRule) *ruleSet {
	rs := &ruleSet{base: base, rules: rules}
	add := func(m *map[string][]int32, key string, i int32) {
		if *m == nil {
			*m = map[string][]int32{}
		}
		(*m)[key] = append((*m)[key], i)
	}
	for i := len(rules) - 1; i >= 0; i-- {
		r, idx := rules[i], int32(i)
		switch {
		case r.basename && !hasWildcard(r.pattern):
			add(&rs.names, r.pattern, idx)
		case !r.basename && !hasWildcard(r.pattern):
			add(&rs.paths, r.pattern, idx)
			rs.anchored = true
		case r.basename && r.pattern[0] == '*' && len(r.pattern) > 1 && !hasWildcard(r.pattern[1:]):
			if suf := r.pattern[1:]; suf[0] == '.' && strings.IndexByte(suf[1:], '.') < 0 {
				add(&rs.exts, suf, idx)
			} else {
				rs.suffixes = append(rs.suffixes, idx)
			}
		default:
			rs.general = append(rs.general, idx)
			if !r.basename {
				rs.anchored = true
			}
		}
	}
	return rs
}

// match returns the index of the last rule matching the entry name (its
// base name) at rel (its path relative to rs.base; only needed when
// rs.anchored), or -1.
func (rs *ruleSet) match(name, rel string, isDir bool) int {
	best := int32(-1)
	first := func(ids []int32) {
		for _, i := range ids {
			if i <= best {
				return
			}
			if !rs.rules[i].dirOnly || isDir {
				best = i
				return
			}
		}
	}
	first(rs.names[name])
	if rs.anchored {
		first(rs.paths[rel])
	}
	if len(rs.exts) > 0 {
		if dot := strings.LastIndexByte(name, '.'); dot >= 0 {
			first(rs.exts[name[dot:]])
		}
	}
	for _, i := range rs.suffixes {
		if i <= best {
			break
		}
		r := &rs.rules[i]
		if (!r.dirOnly || isDir) && strings.HasSuffix(name, r.pattern[1:]) {
			best = i
			break
		}
	}
	for _, i := range rs.general {
		if i <= best {
			break
		}
		r := &rs.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		subject := name
		if !r.basename {
			subject = rel
		}
		if wildmatch(r.pattern, subject) == wmMatch {
			best = i
			break
		}
	}
	return int(best)
}

// filtered returns rs without the rules keep rejects (nil when none is
// left).
func (rs *ruleSet) filtered(keep func(ignoreRule) bool) *ruleSet {
	rules := slices.DeleteFunc(slices.Clone(rs.rules), func(r ignoreRule) bool { return !keep(r) })
	if len(rules) == 0 {
		return nil
	}
	return compileRules(rs.base, rules)
}

// Results of wildmatch, as in git's wildmatch.c: the abort results let
// a failed "*" or "**" give up early instead of backtracking further.
const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// wildmatch matches text against a git wildmatch pattern with
// WM_PATHNAME semantics: "*", "?" and brackets never match "/"; "**"
// between slashes (or at either end) matches across directories; "\"
// escapes. It is a port of git's dowild.
// It is long because it keeps dowild's shape, case for case, so it can
// be checked against git's code and test vectors.
func wildmatch(p, text string) int {
	start := p
	for ; len(p) > 0; p, text = p[1:], text[1:] {
		pc := p[0]
		if len(text) == 0 && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			p = p[1:]
			if len(p) == 0 {
				return wmNoMatch // a trailing backslash matches nothing
			}
			if text[0] != p[0] {
				return wmNoMatch
			}
		default:
			if text[0] != pc {
				return wmNoMatch
			}
		case '?':
			if text[0] == '/' {
				return wmNoMatch
			}
		case '*':
			prevSlash := len(p) == len(start) || start[len(start)-len(p)-1] == '/'
			p = p[1:]
			matchSlash := false
			if len(p) > 0 && p[0] == '*' {
				for len(p) > 0 && p[0] == '*' {
					p = p[1:]
				}
				if prevSlash && (len(p) == 0 || p[0] == '/') {
					// "**/" also matches no directory at all.
					if len(p) > 0 && wildmatch(p[1:], text) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				}
			}
			if len(p) == 0 {
				if !matchSlash && strings.IndexByte(text, '/') >= 0 {
					return wmAbortToStarStar
				}
				return wmMatch
			}
			if !matchSlash && p[0] == '/' {
				// "*/": skip to the next slash of text.
				i := strings.IndexByte(text, '/')
				if i < 0 {
					return wmAbortAll
				}
				text = text[i:]
				p, text = p[1:], text[1:]
				if len(p) == 0 {
					if len(text) == 0 {
						return wmMatch
					}
					return wmNoMatch
				}
				// Restart the loop at p, text without advancing.
				r := wildmatch(p, text)
				return r
			}
			for len(text) > 0 {
				r := wildmatch(p, text)
				if r != wmNoMatch && (!matchSlash || r != wmAbortToStarStar) {
					return r
				}
				if !matchSlash && text[0] == '/' {
					return wmAbortToStarStar
				}
				text = text[1:]
			}
			return wmAbortAll
		case '[':
			r, rest := matchBracket(p, text[0])
			switch r {
			case wmAbortAll:
				return wmAbortAll
			case wmNoMatch:
				return wmNoMatch
			}
			p = rest // at the closing ']'
		}
	}
	if len(text) > 0 {
		return wmNoMatch
	}
	return wmMatch
}

// matchBracket matches c against the bracket expression at p (p[0] is
// "["), returning the result and p at the closing "]".
func matchBracket(p string, c byte) (int, string) {
	p = p[1:]
	if len(p) == 0 {
		return wmAbortAll, p
	}
	negated := false
	if p[0] == '!' || p[0] == '^' {
		negated = true
		p = p[1:]
	}
	matched := false
	var prev byte
	for first := true; ; first = false {
		if len(p) == 0 {
			return wmAbortAll, p
		}
		pc := p[0]
		if pc == ']' && !first {
			break
		}
		switch {
		case pc == '\\':
			p = p[1:]
			if len(p) == 0 {
				return wmAbortAll, p
			}
			pc = p[0]
			if c == pc {
				matched = true
			}
		case pc == '-' && prev != 0 && len(p) > 1 && p[1] != ']':
			p = p[1:]
			hi := p[0]
			if hi == '\\' {
				p = p[1:]
				if len(p) == 0 {
					return wmAbortAll, p
				}
				hi = p[0]
			}
			if prev <= c && c <= hi {
				matched = true
			}
			pc = 0
		case pc == '[' && len(p) > 1 && p[1] == ':':
			end := strings.IndexByte(p[2:], ']')
			if end < 0 {
				return wmAbortAll, p
			}
			if end == 0 || p[2+end-1] != ':' {
				// Not a class: a literal "[".
				if c == '[' {
					matched = true
				}
				break
			}
			class := p[2 : 2+end-1]
			p = p[2+end:] // at the "]" of ":]"
			ok, known := classMatch(class, c)
			if !known {
				return wmAbortAll, p
			}
			if ok {
				matched = true
			}
			pc = 0
		default:
			if c == pc {
				matched = true
			}
		}
		prev = pc
		p = p[1:]
	}
	if matched == negated || c == '/' {
		return wmNoMatch, p
	}
	return wmMatch, p
}

// classMatch matches c against a POSIX character class name.
func classMatch(class string, c byte) (ok, known bool) {
	isUpper := 'A' <= c && c <= 'Z'
	isLower := 'a' <= c && c <= 'z'
	isDigit := '0' <= c && c <= '9'
	switch class {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !isUpper && !isLower && !isDigit, true
	case "space":
		return c == ' ' || ('\t' <= c && c <= '\r'), true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}
