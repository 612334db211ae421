package skilltool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/skill"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Name is the tool's name.
const Name = "skill"

// CodeUnknownSkill: the call named a skill the session does not have.
const CodeUnknownSkill = "UNKNOWN_SKILL"

// Caps of the system-prompt listing.
const (
	// DefaultListed is how many skills the listing names with their
	// descriptions; the rest are named in a note.
	DefaultListed = 30
	// ListedDescription caps one description, in runes.
	ListedDescription = 250
	// maxUnlistedNames caps the names the note gives.
	maxUnlistedNames = 100
)

const (
	description = "Load a skill: the instructions of its SKILL.md and the list of the files in its folder. " +
		"The skills available are listed in the system prompt; load the one whose description fits the task before you start it, " +
		"then follow its instructions. Read the files it refers to with `read` (paths in a skill are relative to its folder) " +
		"and run its scripts with `bash`, as for any file or command."
	parameters = `{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The skill's name, as listed in the system prompt."}` +
		`},"required":["name"],"additionalProperties":false}`
)

// Tool is the `skill` tool over one session's skills.
type Tool struct {
	set *skill.Set
	// Listed caps the skills the system prompt lists (0: DefaultListed).
	Listed int
}

// New returns the tool over set.
func New(set *skill.Set) *Tool { return &Tool{set: set} }

// Skills returns the set the tool serves.
func (t *Tool) Skills() *skill.Set { return t.set }

// Spec returns the tool's schema.
func (t *Tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: Name, Description: description, Parameters: json.RawMessage(parameters)}
}

// Kind is "read": the tool reads the skill's text.
func (t *Tool) Kind() string { return "read" }

// Output is the raw output of a call.
type Output struct {
	Name   string   `json:"name"`
	Folder string   `json:"folder"`
	File   string   `json:"file"`
	Hash   string   `json:"hash"`
	Files  []string `json:"files"`
	More   bool     `json:"more,omitempty"`
}

// Execute loads one skill.
func (t *Tool) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: fmt.Sprintf("invalid arguments: %v", err)}
	}
	k, ok := t.set.Get(strings.TrimSpace(args.Name))
	if !ok {
		return tool.Result{}, &tool.Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("unknown skill %q; the skills are: %s", args.Name, strings.Join(t.set.Names(), ", "))}
	}
	files, more, err := skill.Files(k)
	if err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeToolFailed, Message: fmt.Sprintf("skill %q: its folder cannot be listed: %v", k.Name, err), Err: err}
	}
	return Render(k, files, more), nil
}

// Render is the result of loading k whose folder holds files.
func Render(k *skill.Skill, files []string, more bool) tool.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "<skill name=%q folder=%q>\n%s\n</skill>\n", k.Name, k.Dir, k.Body)
	fmt.Fprintf(&b, "\nFiles in %s (read them with `read` as %s/PATH; run scripts with `bash`):\n", k.Dir, k.Dir)
	for _, f := range files {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	if more {
		fmt.Fprintf(&b, "- … (more files; the list stops at %d)\n", skill.MaxListedFiles)
	}
	res := tool.TextResult(b.String(), Output{Name: k.Name, Folder: k.Dir, File: k.File, Hash: k.Hash, Files: files, More: more})
	res.Display = &session.ToolDisplay{Locations: []session.ToolLocation{{Path: k.File, Line: 1}}}
	return res
}

// SystemPromptSection lists the skills for the system prompt: name and
// description of the first Listed, a note naming the rest.
func (t *Tool) SystemPromptSection() string { return Listing(t.set, t.Listed) }

// Listing renders the skills of set for a system prompt.
func Listing(set *skill.Set, limit int) string {
	if set.Len() == 0 {
		return ""
	}
	if limit <= 0 {
		limit = DefaultListed
	}
	var b strings.Builder
	b.WriteString("Skills: packaged know-how for tasks of this project and user. When a task matches a skill's description, " +
		"load the skill with the `skill` tool first and follow it.")
	for i, k := range set.Skills {
		if i == limit {
			rest := set.Names()[limit:]
			shown := rest
			if len(shown) > maxUnlistedNames {
				shown = shown[:maxUnlistedNames]
			}
			fmt.Fprintf(&b, "\n(%d more skills are not listed here, to keep this prompt short; `skill` loads any of them by name: %s", len(rest), strings.Join(shown, ", "))
			if len(shown) < len(rest) {
				fmt.Fprintf(&b, ", and %d more", len(rest)-len(shown))
			}
			b.WriteString(")")
			break
		}
		fmt.Fprintf(&b, "\n- %s: %s", k.Name, Cut(k.Description, ListedDescription))
	}
	return b.String()
}

// Cut folds s onto one line of at most n runes.
func Cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}
