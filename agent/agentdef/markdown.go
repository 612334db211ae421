package agentdef

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Frontmatter is a Markdown file's YAML header and its body.
type Frontmatter struct {
	// YAML is the text between the opening and the closing "---" lines;
	// Line is the file line its first line is on.
	YAML []byte
	Line int
	// Body is everything after the closing line; BodyLine its first line.
	Body     []byte
	BodyLine int
}

// FrontmatterError is a file whose frontmatter cannot be split off.
type FrontmatterError struct {
	Line    int
	Message string
}

func (e *FrontmatterError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Message) }

// SplitFrontmatter splits data into its frontmatter and body: data must
// start with a line "---" (after an optional UTF-8 byte order mark) and
// the frontmatter ends at the next line "---".
func SplitFrontmatter(data []byte) (Frontmatter, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	first, rest, _ := cutLine(data)
	if !isFence(first) {
		return Frontmatter{}, &FrontmatterError{Line: 1, Message: `no frontmatter: the file must start with a line "---"`}
	}
	fm := Frontmatter{Line: 2}
	start := len(data) - len(rest)
	line := 2
	for off := start; ; {
		l, next, ok := cutLine(data[off:])
		if isFence(l) {
			fm.YAML = data[start:off]
			fm.Body = next
			fm.BodyLine = line + 1
			return fm, nil
		}
		if !ok {
			break
		}
		off = len(data) - len(next)
		line++
	}
	return Frontmatter{}, &FrontmatterError{Line: 1, Message: `the frontmatter is not closed: no line "---" after line 1`}
}

// cutLine returns data's first line (without its line ending), the rest,
// and whether a line ending was found.
func cutLine(data []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return data, nil, false
	}
	return data[:i], data[i+1:], true
}

func isFence(l []byte) bool {
	return string(bytes.TrimRight(l, " \t\r")) == "---"
}

// field is one frontmatter key, its value and its file line.
type field struct {
	key  string
	val  *yaml.Node
	line int
	// off turns a YAML line of a node inside val into a file line.
	off int
}

// lineOf is the file line of a node inside the field's value.
func (f field) lineOf(n *yaml.Node) int { return f.off + n.Line }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseFields decodes frontmatter YAML into its top-level keys. An error
// names the file line.
func parseFields(fm Frontmatter) ([]field, *Problem) {
	var doc yaml.Node
	if err := yaml.Unmarshal(fm.YAML, &doc); err != nil {
		line := fm.Line
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
			if n, convErr := strconv.Atoi(msg[m[2]:m[3]]); convErr == nil {
				line = fm.Line + n - 1
				msg = strings.TrimPrefix(strings.TrimSpace(msg[m[1]:]), ": ")
			}
		}
		return nil, &Problem{Line: line, Message: "frontmatter is not valid YAML: " + msg}
	}
	if len(doc.Content) == 0 {
		return nil, &Problem{Line: fm.Line, Message: "the frontmatter is empty (it needs at least a description)"}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, &Problem{Line: fm.Line + m.Line - 1, Message: "the frontmatter must be a mapping of keys to values"}
	}
	var out []field
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		line := fm.Line + k.Line - 1
		if k.Kind != yaml.ScalarNode {
			return nil, &Problem{Line: line, Message: "a frontmatter key must be a plain name"}
		}
		for _, f := range out {
			if f.key == k.Value {
				return nil, &Problem{Line: line, Message: fmt.Sprintf("key %q appears twice (first on line %d)", k.Value, f.line)}
			}
		}
		out = append(out, field{key: k.Value, val: v, line: line, off: fm.Line - 1})
	}
	return out, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// str decodes a scalar string field.
func (f field) str() (string, error) {
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		return "", fmt.Errorf("%s must be a string", f.key)
	}
	return f.val.Value, nil
}

// list decodes a list field: a YAML sequence of names or one
// comma-separated string. Null is absent (nil).
func (f field) list() ([]string, error) {
	if isNull(f.val) {
		return nil, nil
	}
	out := []string{}
	switch f.val.Kind {
	case yaml.ScalarNode:
		for part := range strings.SplitSeq(f.val.Value, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	case yaml.SequenceNode:
		for _, it := range f.val.Content {
			if it.Kind != yaml.ScalarNode || isNull(it) || strings.TrimSpace(it.Value) == "" {
				return nil, fmt.Errorf("%s must be a list of tool names", f.key)
			}
			out = append(out, strings.TrimSpace(it.Value))
		}
	default:
		return nil, fmt.Errorf("%s must be a list of tool names or a comma-separated string", f.key)
	}
	return out, nil
}

// names decodes a list of names (skills): a sequence or one
// comma-separated string, each a valid name.
func (f field) names() ([]string, error) {
	list, err := f.list()
	if err != nil {
		return nil, fmt.Errorf("%s must be a list of names", f.key)
	}
	for _, n := range list {
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("%s: %v", f.key, err)
		}
	}
	return list, nil
}

func (f field) boolean() (bool, error) {
	var b bool
	if f.val.Kind != yaml.ScalarNode || f.val.Tag != "!!bool" || f.val.Decode(&b) != nil {
		return false, fmt.Errorf("%s must be true or false", f.key)
	}
	return b, nil
}

func (f field) positiveInt() (int, error) {
	var n int
	if f.val.Kind != yaml.ScalarNode || f.val.Tag != "!!int" || f.val.Decode(&n) != nil || n <= 0 {
		return 0, fmt.Errorf("%s must be a positive whole number", f.key)
	}
	return n, nil
}

func (f field) positiveNumber() (float64, error) {
	var x float64
	if f.val.Kind != yaml.ScalarNode || (f.val.Tag != "!!int" && f.val.Tag != "!!float") || f.val.Decode(&x) != nil ||
		!(x > 0) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s must be a positive number", f.key)
	}
	return x, nil
}

// duration decodes a Go duration ("90s", "10m") or a whole number of
// seconds.
func (f field) duration() (time.Duration, error) {
	bad := fmt.Errorf(`%s must be a positive duration ("90s", "10m") or a whole number of seconds`, f.key)
	if f.val.Kind != yaml.ScalarNode || isNull(f.val) {
		return 0, bad
	}
	if f.val.Tag == "!!int" {
		var n int64
		if f.val.Decode(&n) != nil || n <= 0 || n > math.MaxInt64/int64(time.Second) {
			return 0, bad
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(f.val.Value)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	toolPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
)

func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("name %q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// stem is the file name without its extension.
// A Copilot file's ".agent.md" goes as a whole.
func stem(path string) string {
	base := filepath.Base(path)
	if s, ok := strings.CutSuffix(base, ".agent.md"); ok && s != "" {
		return s
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// parseMarkdown parses ours or Claude Code's format.
func parseMarkdown(path string, format Format, data []byte) (*Definition, []Problem) {
	skip := func(line int, format string, args ...any) (*Definition, []Problem) {
		return nil, []Problem{{File: path, Line: line, Message: fmt.Sprintf(format, args...), Skipped: true}}
	}
	fm, err := SplitFrontmatter(data)
	if err != nil {
		fe := err.(*FrontmatterError)
		return skip(fe.Line, "%s", fe.Message)
	}
	fields, p := parseFields(fm)
	if p != nil {
		p.File, p.Skipped = path, true
		return nil, []Problem{*p}
	}
	def := &Definition{Line: 1, Name: stem(path), Instructions: strings.TrimSpace(string(fm.Body))}
	var notes []Problem
	note := func(line int, format string, args ...any) {
		notes = append(notes, Problem{File: path, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	for _, f := range fields {
		if err := applyField(def, f, format, note); err != nil {
			return skip(f.line, "%v", err)
		}
	}
	if def.Description == "" {
		return skip(fm.Line, "description is missing or empty (the model picks an agent by its description)")
	}
	if line, err := checkExternal(def, fields); err != nil {
		return skip(line, "%v", err)
	}
	if err := checkName(def.Name); err != nil {
		return skip(def.Line, "%v", err)
	}
	return def, notes
}

// applyField sets the definition key f of a file in format on def; a
// key of another format that is not mapped is noted, not an error. It is
// long because it is one case per frontmatter key, each a few lines.
func applyField(def *Definition, f field, format Format, note func(line int, format string, args ...any)) error {
	var err error
	switch f.key {
	case "name":
		if def.Name, err = f.str(); err == nil {
			def.Line = f.line
			err = checkName(def.Name)
		}
	case "description":
		if def.Description, err = f.str(); err == nil {
			def.Description = strings.TrimSpace(def.Description)
		}
	case "tools", "disallowedTools":
		var list []string
		if list, err = f.list(); err == nil && list != nil {
			allow := f.key == "tools"
			if format == FormatOurs {
				err = checkTools(f.key, list)
			} else {
				list = mapClaudeTools(list, allow, func(msg string) { note(f.line, "%s", msg) })
			}
			if allow {
				def.Tools = list
			} else {
				def.DisallowedTools = list
			}
		}
	case "model":
		var m string
		if m, err = f.str(); err == nil {
			if format == FormatOurs {
				def.Model, err = ourModel(m)
			} else {
				def.Model = foreignModel(m, "anthropic", func(msg string) { note(f.line, "%s", msg) })
			}
		}
	case "mode":
		if format != FormatOurs {
			note(f.line, "key %q is not mapped: ignored", f.key)
			return nil
		}
		var m string
		if m, err = f.str(); err == nil {
			def.Mode = Mode(m)
			if def.Mode != ModeBackground && def.Mode != ModeForeground {
				err = fmt.Errorf(`mode must be "background" or "foreground", not %q`, m)
			}
		}
	case "permissionMode":
		var m string
		if m, err = f.str(); err == nil {
			if format == FormatOurs {
				def.PermissionMode, err = ourPermission(m)
			} else {
				def.PermissionMode = claudePermission(m, func(msg string) { note(f.line, "%s", msg) })
			}
		}
	case "maxTurns":
		def.MaxTurns, err = f.positiveInt()
	case "skills":
		def.Skills, err = f.names()
	case "maxTokens":
		def.MaxTokens, err = f.positiveInt()
	case "maxCostUsd":
		def.MaxCostUSD, err = f.positiveNumber()
	case "timeout":
		def.Timeout, err = f.duration()
	case "isolation":
		var m string
		if m, err = f.str(); err == nil {
			def.Isolation = m
			if m != IsolationNone && m != IsolationWorktree {
				err = fmt.Errorf(`isolation must be "none" or "worktree", not %q`, m)
			}
		}
	case "command", "args", "env", "loadSession", "resume":
		if format != FormatOurs {
			note(f.line, "key %q is not mapped: ignored", f.key)
			return nil
		}
		err = parseExternal(def, f)
	default:
		if format == FormatOurs {
			err = fmt.Errorf("unknown key %q (known: name, description, tools, disallowedTools, model, mode, permissionMode, maxTurns, maxTokens, maxCostUsd, timeout, skills, isolation, command, args, env, loadSession, resume)", f.key)
		} else {
			note(f.line, "key %q is not mapped: ignored", f.key)
		}
	}
	return err
}

func checkTools(key string, list []string) error {
	for _, t := range list {
		if strings.Contains(t, "(") {
			return fmt.Errorf("%s: %q: tool lists take tool names; argument patterns belong in the settings' permission rules", key, t)
		}
		if !toolPattern.MatchString(t) {
			return fmt.Errorf("%s: %q is not a tool name", key, t)
		}
	}
	return nil
}

// ourModel checks a model spec of our format.
func ourModel(m string) (string, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "inherit" {
		return "", nil
	}
	if p, name, ok := strings.Cut(m, "/"); ok && p != "" && name != "" && !strings.ContainsAny(m, " \t") {
		return m, nil
	}
	return "", fmt.Errorf(`model must be "inherit" or PROVIDER/MODEL as --model takes it, not %q`, m)
}

// foreignModel maps another agent's model: "inherit" and a bare alias
// inherit (reported), a full model id gets its vendor's provider.
func foreignModel(m, provider string, note func(string)) string {
	m = strings.TrimSpace(m)
	switch {
	case m == "" || m == "inherit":
		return ""
	case strings.Contains(m, "/"):
		return m
	case provider == "anthropic" && ClaudeModelAliases[m] != "":
		return "anthropic/" + ClaudeModelAliases[m]
	case provider == "anthropic" && !strings.HasPrefix(m, "claude-"):
		note(fmt.Sprintf("model alias %q is not mapped: the child inherits the parent's model (name a model, e.g. anthropic/claude-…, to pick one)", m))
		return ""
	case provider == "":
		note(fmt.Sprintf("model %q is not mapped: the child inherits the parent's model (this agent has no provider for it)", m))
		return ""
	}
	return provider + "/" + m
}

// ClaudeModelAliases maps Claude Code's model aliases to the current
// model ids of the built-in model table (agent/budget; a test there holds
// them to it).
var ClaudeModelAliases = map[string]string{
	"opus":   "claude-opus-4-5",
	"sonnet": "claude-sonnet-4-5",
	"haiku":  "claude-haiku-4-5",
}

// vendorModel maps a bare model id named by an agent of another vendor
// (Cursor, opencode) to a route by its family: claude-* to anthropic,
// gpt-* and o<digit>* to openai; "" when the family is unknown.
func vendorModel(m string) string {
	switch {
	case strings.HasPrefix(m, "claude-"):
		return "anthropic/" + m
	case strings.HasPrefix(m, "gpt-"), len(m) > 1 && m[0] == 'o' && m[1] >= '0' && m[1] <= '9':
		return "openai/" + m
	}
	return ""
}

func ourPermission(m string) (string, error) {
	switch m {
	case PermissionDefault, PermissionAcceptEdits, PermissionPlan, PermissionBypass:
		return m, nil
	}
	return "", fmt.Errorf(`permissionMode must be "default", "accept-edits", "plan" or "bypass", not %q`, m)
}

func claudePermission(m string, note func(string)) string {
	switch m {
	case "default":
		return PermissionDefault
	case "acceptEdits":
		return PermissionAcceptEdits
	case "plan":
		return PermissionPlan
	case "bypassPermissions":
		return PermissionBypass
	}
	note(fmt.Sprintf("permissionMode %q is not mapped: the child follows the session's mode", m))
	return ""
}
