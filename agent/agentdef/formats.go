package agentdef

// This file maps the Markdown agent files of Gemini CLI, Cursor, GitHub
// Copilot and opencode to definitions. Fields that mean the same as ours
// are mapped; a field with no counterpart is reported (file and line) and
// ignored; a value that cannot be read skips the file, reported. Mapping
// never widens: a permission we cannot express in a tool list is dropped
// from an allow list and denies the whole tool in a deny list.

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// foreign is a Markdown definition of another agent being parsed.
type foreign struct {
	path  string
	def   *Definition
	notes []Problem
}

func (x *foreign) note(line int, format string, args ...any) {
	x.notes = append(x.notes, Problem{File: x.path, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (x *foreign) ignored(f field) { x.note(f.line, "key %q is not mapped: ignored", f.key) }

// deny adds tools to the deny list once each.
func (x *foreign) deny(tools ...string) {
	for _, t := range tools {
		if !contains(x.def.DisallowedTools, t) {
			x.def.DisallowedTools = append(x.def.DisallowedTools, t)
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// skipFile is a key whose value makes the file unusable as a subagent.
type skipFile struct{ msg string }

func (e skipFile) Error() string { return e.msg }

// parseForeign parses the frontmatter and body shared by the four
// formats: name (lenientName: an invalid name falls back to the file
// name, reported) and description here, every other key through each,
// which returns handled=false for a key it does not know.
func parseForeign(path string, data []byte, lenientName bool, each func(x *foreign, f field) (bool, error)) (*Definition, []Problem) {
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
	x := &foreign{path: path, def: &Definition{Line: 1, Name: stem(path), Instructions: strings.TrimSpace(string(fm.Body))}}
	hasDesc := false
	for _, f := range fields {
		var err error
		switch f.key {
		case "name":
			var n string
			if n, err = f.str(); err == nil {
				if cerr := checkName(n); cerr != nil && lenientName {
					x.note(f.line, "name %q is a display name, not an agent name: the file name %q is used", n, x.def.Name)
				} else {
					x.def.Name, x.def.Line, err = n, f.line, cerr
				}
			}
		case "description":
			if x.def.Description, err = f.str(); err == nil {
				x.def.Description = strings.TrimSpace(x.def.Description)
				hasDesc = x.def.Description != ""
			}
		default:
			var handled bool
			handled, err = each(x, f)
			if !handled && err == nil {
				x.ignored(f)
			}
		}
		if err != nil {
			return skip(f.line, "%v", err)
		}
	}
	if !hasDesc {
		return skip(fm.Line, "description is missing or empty (the model picks an agent by its description)")
	}
	if err := checkName(x.def.Name); err != nil {
		return skip(x.def.Line, "%v", err)
	}
	return x.def, x.notes
}

// mapTools translates a tool list through table (their name → ours). "*"
// keeps every tool (nil). A name with no counterpart is left out and
// reported.
func (x *foreign) mapTools(f field, table map[string][]string) ([]string, error) {
	list, err := f.list()
	if err != nil || list == nil {
		return nil, err
	}
	out := []string{}
	for _, t := range list {
		if t == "*" {
			return nil, nil
		}
		ours, ok := table[t]
		if !ok {
			x.note(f.line, "tool %q has no counterpart here: left out", t)
			continue
		}
		for _, o := range ours {
			if !contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// geminiTools maps Gemini CLI's built-in tool names to ours.
var geminiTools = map[string][]string{
	"read_file":           {"read"},
	"read_many_files":     {"read"},
	"write_file":          {"write"},
	"replace":             {"edit"},
	"glob":                {"glob"},
	"list_directory":      {"glob"},
	"search_file_content": {"grep"},
	"grep_search":         {"grep"},
	"run_shell_command":   {"bash"},
	"write_todos":         {"todo"},
}

// parseGemini parses a Gemini CLI subagent (.gemini/agents/*.md): tools,
// model and max_turns are mapped; a remote (A2A) agent is skipped.
func parseGemini(path string, data []byte) (*Definition, []Problem) {
	return parseForeign(path, data, false, func(x *foreign, f field) (bool, error) {
		switch f.key {
		case "kind":
			k, err := f.str()
			if err == nil && k == "remote" {
				return true, skipFile{"kind \"remote\" is an agent reached over the network (A2A), which this agent does not run"}
			}
			if err == nil && k != "local" {
				return true, fmt.Errorf(`kind must be "local" or "remote", not %q`, k)
			}
			return true, err
		case "tools":
			var err error
			x.def.Tools, err = x.mapTools(f, geminiTools)
			return true, err
		case "model":
			m, err := f.str()
			if err == nil {
				x.def.Model = foreignModel(m, "", func(msg string) { x.note(f.line, "%s", msg) })
			}
			return true, err
		case "max_turns":
			var err error
			x.def.MaxTurns, err = f.positiveInt()
			return true, err
		}
		return false, nil
	})
}

// parseCursor parses a Cursor subagent (.cursor/agents/*.md): readonly
// runs it in plan mode, is_background picks the mode (Cursor's default
// is the foreground).
func parseCursor(path string, data []byte) (*Definition, []Problem) {
	mode := ModeForeground
	def, probs := parseForeign(path, data, false, func(x *foreign, f field) (bool, error) {
		switch f.key {
		case "readonly":
			b, err := f.boolean()
			if err == nil && b {
				x.def.PermissionMode = PermissionPlan
			}
			return true, err
		case "is_background":
			b, err := f.boolean()
			if err == nil && b {
				mode = ModeBackground
			}
			return true, err
		case "model":
			m, err := f.str()
			if err != nil {
				return true, err
			}
			switch m = strings.TrimSpace(m); {
			case m == "" || m == "inherit":
			case vendorModel(m) != "":
				x.def.Model = vendorModel(m)
			default:
				x.note(f.line, "model %q is not mapped: the child inherits the parent's model", m)
			}
			return true, nil
		}
		return false, nil
	})
	if def != nil {
		def.Mode = mode
	}
	return def, probs
}

// copilotTools maps Copilot's tool aliases (and the tool names it accepts
// as their synonyms) to ours.
var copilotTools = map[string][]string{
	"execute": {"bash"}, "shell": {"bash"}, "Bash": {"bash"}, "powershell": {"bash"},
	"read": {"read"}, "Read": {"read"},
	"edit": {"write", "edit"}, "Edit": {"edit"}, "MultiEdit": {"edit"}, "Write": {"write"},
	"search": {"grep", "glob"}, "Grep": {"grep"}, "Glob": {"glob"},
	"agent": {"subagent"}, "custom-agent": {"subagent"}, "Task": {"subagent"},
	"todo": {"todo"}, "TodoWrite": {"todo"},
}

// parseCopilot parses a GitHub Copilot custom agent (.github/agents/
// *.agent.md): its name may be a display name (the file name is then the
// agent's name), tools are Copilot's aliases, a file the model may not
// invoke (disable-model-invocation) is skipped.
func parseCopilot(path string, data []byte) (*Definition, []Problem) {
	return parseForeign(path, data, true, func(x *foreign, f field) (bool, error) {
		switch f.key {
		case "tools":
			var err error
			x.def.Tools, err = x.mapTools(f, copilotTools)
			return true, err
		case "model":
			if f.val.Kind == yaml.SequenceNode || !isNull(f.val) {
				x.note(f.line, "model %s is not mapped (Copilot names models by display name): the child inherits the parent's model", strings.TrimSpace(nodeText(f.val)))
			}
			return true, nil
		case "disable-model-invocation":
			b, err := f.boolean()
			if err == nil && b {
				return true, skipFile{"disable-model-invocation is true: the model may not start this agent"}
			}
			return true, err
		}
		return false, nil
	})
}

// nodeText renders a YAML value on one line for a report.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", n.Value)
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, nodeText(c))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// opencodeTools maps opencode's tool and permission names to ours.
var opencodeTools = map[string][]string{
	"bash": {"bash"}, "shell": {"bash"},
	"edit": {"write", "edit"}, "write": {"write"}, "patch": {"edit"},
	"read": {"read"}, "grep": {"grep"}, "glob": {"glob"}, "list": {"glob"},
	"todowrite": {"todo"}, "task": {"subagent"},
}

// parseOpencode parses an opencode agent (.opencode/agents/*.md): mode
// (a primary-only agent is not a subagent), model, steps, and the denials
// of its permissions (the list form) or permission / tools (the older
// map forms); allows and asks are left to the session's settings and
// gate.
func parseOpencode(path string, data []byte) (*Definition, []Problem) {
	return parseForeign(path, data, false, func(x *foreign, f field) (bool, error) {
		switch f.key {
		case "mode":
			m, err := f.str()
			switch {
			case err != nil:
				return true, err
			case m == "primary":
				return true, skipFile{`mode "primary" is an agent for the person to switch to, not a subagent`}
			case m != "subagent" && m != "all":
				return true, fmt.Errorf(`mode must be "subagent", "all" or "primary", not %q`, m)
			}
			return true, nil
		case "disable":
			b, err := f.boolean()
			if err == nil && b {
				return true, skipFile{"disable is true"}
			}
			return true, err
		case "model":
			m, err := f.str()
			if err != nil {
				return true, err
			}
			m = strings.TrimSpace(m)
			if base, variant, ok := strings.Cut(m, "#"); ok {
				x.note(f.line, "model variant %q is not mapped: %s is used", variant, base)
				m = base
			}
			x.def.Model = foreignModel(m, "", func(msg string) { x.note(f.line, "%s", msg) })
			return true, nil
		case "steps", "maxSteps":
			var err error
			x.def.MaxTurns, err = f.positiveInt()
			return true, err
		case "permissions":
			return true, x.opencodePermissions(f)
		case "permission":
			return true, x.opencodePermissionMap(f)
		case "tools":
			return true, x.opencodeToolSwitches(f)
		}
		return false, nil
	})
}

// opencodePermissions maps the list form: [{action, resource, effect}].
func (x *foreign) opencodePermissions(f field) error {
	if f.val.Kind != yaml.SequenceNode {
		return fmt.Errorf("permissions must be a list of {action, resource, effect}")
	}
	for _, it := range f.val.Content {
		line := f.lineOf(it)
		if it.Kind != yaml.MappingNode {
			return fmt.Errorf("permissions: each entry must be a mapping of action, resource and effect")
		}
		var rule struct {
			Action   string `yaml:"action"`
			Resource string `yaml:"resource"`
			Effect   string `yaml:"effect"`
		}
		if err := it.Decode(&rule); err != nil || rule.Action == "" || rule.Effect == "" {
			return fmt.Errorf("permissions: each entry needs an action and an effect")
		}
		x.opencodeRule(line, rule.Action, rule.Resource, rule.Effect)
	}
	return nil
}

// opencodeRule maps one rule: a deny denies the whole tool (a resource
// narrower than "*" is reported: denying all of it is wider, never
// looser); allow and ask are the session's to decide.
func (x *foreign) opencodeRule(line int, action, resource, effect string) {
	ours, ok := opencodeTools[action]
	switch {
	case effect != "deny":
		x.note(line, "permission %s %s %q is not mapped: the session's settings and gate decide", effect, action, resource)
	case !ok:
		x.note(line, "permission deny %s has no counterpart here: ignored", action)
	default:
		if resource != "" && resource != "*" {
			x.note(line, "permission deny %s %q: patterns are not supported in agent tool lists: all of %s is denied", action, resource, strings.Join(ours, ", "))
		}
		x.deny(ours...)
	}
}

// opencodePermissionMap maps the older map form: {edit: deny, bash:
// {"git *": allow, "*": deny}}.
func (x *foreign) opencodePermissionMap(f field) error {
	if f.val.Kind != yaml.MappingNode {
		return fmt.Errorf("permission must be a mapping of tool to allow, ask or deny")
	}
	for i := 0; i+1 < len(f.val.Content); i += 2 {
		k, v := f.val.Content[i], f.val.Content[i+1]
		line := f.lineOf(k)
		switch v.Kind {
		case yaml.ScalarNode:
			x.opencodeRule(line, k.Value, "*", v.Value)
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				x.opencodeRule(f.lineOf(v.Content[j]), k.Value, v.Content[j].Value, v.Content[j+1].Value)
			}
		default:
			return fmt.Errorf("permission %s must be allow, ask, deny or a mapping of patterns", k.Value)
		}
	}
	return nil
}

// opencodeToolSwitches maps {write: false, bash: false}: false denies.
func (x *foreign) opencodeToolSwitches(f field) error {
	if f.val.Kind != yaml.MappingNode {
		return fmt.Errorf("tools must be a mapping of tool name to true or false")
	}
	for i := 0; i+1 < len(f.val.Content); i += 2 {
		k, v := f.val.Content[i], f.val.Content[i+1]
		line := f.lineOf(k)
		var on bool
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&on) != nil {
			return fmt.Errorf("tools: %s must be true or false", k.Value)
		}
		if on {
			continue // on is the default: nothing to map
		}
		if ours, ok := opencodeTools[k.Value]; ok {
			x.deny(ours...)
		} else {
			x.note(line, "tool %q has no counterpart here: ignored", k.Value)
		}
	}
	return nil
}
