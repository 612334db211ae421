package agentdef

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// codexFile is a Codex agent file (.codex/agents/<name>.toml).
type codexFile struct {
	Name                  *string        `toml:"name"`
	Description           string         `toml:"description"`
	DeveloperInstructions string         `toml:"developer_instructions"`
	Model                 string         `toml:"model"`
	ModelReasoningEffort  string         `toml:"model_reasoning_effort"`
	SandboxMode           string         `toml:"sandbox_mode"`
	MCPServers            map[string]any `toml:"mcp_servers"`
}

// parseCodex parses Codex's format: developer_instructions is the body,
// sandbox_mode maps to a permission mode, the rest is reported.
func parseCodex(path string, data []byte) (*Definition, []Problem) {
	skip := func(line int, format string, args ...any) (*Definition, []Problem) {
		return nil, []Problem{{File: path, Line: line, Message: fmt.Sprintf(format, args...), Skipped: true}}
	}
	var cf codexFile
	var notes []Problem
	note := func(line int, format string, args ...any) {
		notes = append(notes, Problem{File: path, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&cf)
	var strict *toml.StrictMissingError
	var de *toml.DecodeError
	switch {
	case errors.As(err, &strict):
		// Known keys were decoded; unknown ones are reported.
		for _, e := range strict.Errors {
			line, _ := e.Position()
			note(line, "key %q is not mapped: ignored", strings.Join(e.Key(), "."))
		}
	case errors.As(err, &de):
		line, _ := de.Position()
		return skip(line, "not valid TOML: %s", strings.TrimPrefix(de.Error(), "toml: "))
	case err != nil:
		return skip(0, "not valid TOML: %s", strings.TrimPrefix(err.Error(), "toml: "))
	}
	def := &Definition{Name: stem(path), Line: 1, Description: strings.TrimSpace(cf.Description),
		Instructions: strings.TrimSpace(cf.DeveloperInstructions)}
	if cf.Name != nil {
		def.Name, def.Line = *cf.Name, keyLine(data, "name")
	}
	if err := checkName(def.Name); err != nil {
		return skip(def.Line, "%v", err)
	}
	if def.Description == "" {
		return skip(max(keyLine(data, "description"), 1), "description is missing or empty (the model picks an agent by its description)")
	}
	def.Model = foreignModel(cf.Model, "openai", func(msg string) { note(keyLine(data, "model"), "%s", msg) })
	if cf.ModelReasoningEffort != "" {
		note(keyLine(data, "model_reasoning_effort"), "model_reasoning_effort is not mapped: the child uses its model's default")
	}
	switch cf.SandboxMode {
	case "":
	case "read-only":
		def.PermissionMode = PermissionPlan
	case "workspace-write":
		def.PermissionMode = PermissionAcceptEdits
	case "danger-full-access":
		def.PermissionMode = PermissionBypass
	default:
		note(keyLine(data, "sandbox_mode"), "sandbox_mode %q is not mapped: the child follows the session's mode", cf.SandboxMode)
	}
	if cf.MCPServers != nil {
		note(keyLine(data, "mcp_servers"), "mcp_servers is not mapped: a child uses its session's MCP servers")
	}
	return def, notes
}

// keyLine returns the line of a top-level key (or table) in TOML text,
// 0 when it is not found.
func keyLine(data []byte, key string) int {
	re := regexp.MustCompile(`^\s*(\[\s*)?` + regexp.QuoteMeta(key) + `\s*[=.\]]`)
	for i, l := range bytes.Split(data, []byte("\n")) {
		if re.Match(l) {
			return i + 1
		}
	}
	return 0
}
