package prompt

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed sections
var sections embed.FS

// Input is everything the system prompt is built from.
type Input struct {
	Env Env
	// Roots are the session's additional workspace roots (ACP
	// additionalDirectories), listed in the environment section.
	Roots []string
	// Client is the system prompt the editor gave the session (ACP
	// systemPrompt, append mode): the last section, of its own.
	Client string
	// Tools are the names of the tools the session is offered, in the
	// order the model sees them; each known one gets its guidance line.
	Tools        []string
	Instructions []Instruction
	// Child marks a delegated subagent; Delegation and Persona are its
	// extra sections (the delegating tool's teaching and the persona the
	// parent chose).
	Child      bool
	Delegation string
	Persona    string
	// Extra sections appended at the end (tool-specific teaching such as
	// background delegation).
	Extra []string
}

// Build assembles the system prompt. It is a pure function of in: the
// same input gives the same bytes, which keeps the cached request prefix
// stable.
func Build(in Input) string {
	var parts []string
	parts = append(parts, section("identity.md"))
	if g := toolGuidance(in.Tools); g != "" {
		parts = append(parts, g)
	}
	parts = append(parts, in.Env.block(in.Roots))
	if s := instructionsSection(in.Instructions); s != "" {
		parts = append(parts, s)
	}
	for _, x := range in.Extra {
		if x = strings.TrimSpace(x); x != "" {
			parts = append(parts, x)
		}
	}
	if in.Child {
		parts = append(parts, section("child.md"))
		if d := strings.TrimSpace(in.Delegation); d != "" {
			parts = append(parts, d)
		}
		if p := strings.TrimSpace(in.Persona); p != "" {
			parts = append(parts, p)
		}
	}
	if c := clientSection(in.Client); c != "" {
		parts = append(parts, c)
	}
	return strings.Join(parts, "\n\n") + "\n"
}

// clientOpen starts the section of the editor's system prompt.
const clientOpen = "<client-instructions>\n"

// clientSection renders the editor's system prompt, "" for none.
func clientSection(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return clientOpen + "The editor the person uses adds these instructions; follow them as you follow the project's.\n\n" +
		text + "\n</client-instructions>"
}

// WithClient returns a system prompt text Build made with its editor's
// section replaced by one for client ("" drops it). The section is always
// the last, so the rest of the text stays byte for byte.
func WithClient(text, client string) string {
	body := strings.TrimSuffix(text, "\n")
	if i := strings.LastIndex(body, "\n\n"+clientOpen); i >= 0 && strings.HasSuffix(body, "</client-instructions>") {
		body = body[:i]
	}
	if c := clientSection(client); c != "" {
		body += "\n\n" + c
	}
	return body + "\n"
}

// ChildSection is the section every delegated child gets: it works for
// another agent and its final message is its result.
func ChildSection() string { return section("child.md") }

// section returns an embedded section, trimmed. A missing section is a
// build mistake that the golden tests catch, so it yields "".
func section(name string) string {
	b, err := sections.ReadFile("sections/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// toolGuidance lists the guidance of the offered tools that have one.
func toolGuidance(tools []string) string {
	var lines []string
	for _, name := range tools {
		if strings.ContainsAny(name, "/\\.") {
			continue
		}
		if g := section("tools/" + name + ".md"); g != "" {
			lines = append(lines, "- "+g)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "Tools:\n" + strings.Join(lines, "\n")
}

// Block renders the environment block.
func (e Env) Block() string { return e.block(nil) }

// block renders the environment block with the additional roots.
func (e Env) block(roots []string) string {
	var b strings.Builder
	b.WriteString("<environment>\n")
	fmt.Fprintf(&b, "Working directory: %s\n", e.Cwd)
	if len(roots) > 0 {
		b.WriteString(rootsLinePrefix + strings.Join(roots, ", ") + "\n")
	}
	fmt.Fprintf(&b, "Platform: %s/%s\n", e.OS, e.Arch)
	fmt.Fprintf(&b, "Shell: %s\n", e.Shell)
	fmt.Fprintf(&b, "Date: %s\n", e.Date)
	if e.GitRoot == "" {
		b.WriteString("Git repository: no\n")
	} else {
		fmt.Fprintf(&b, "Git repository: %s\n", e.GitRoot)
		branch := e.Branch
		if branch == "" {
			branch = "(unknown)"
		}
		fmt.Fprintf(&b, "Branch: %s\n", branch)
		state := "clean"
		switch {
		case e.StatusUnknown:
			state = "unknown (git status did not answer)"
		case e.Dirty:
			state = "has uncommitted changes"
		}
		fmt.Fprintf(&b, "Working tree: %s\n", state)
	}
	b.WriteString("</environment>")
	return b.String()
}

// instructionsSection renders the instruction files, each under its path,
// with a note where the cap cut it.
func instructionsSection(ins []Instruction) string {
	var b strings.Builder
	for _, in := range ins {
		if in.Text == "" && in.Cut == 0 && in.Skipped == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("Instructions from the user and the project follow; where they disagree, the later (nearer) file wins.\n")
		}
		if in.Skipped != "" {
			fmt.Fprintf(&b, "\n[Not read: %s (%s). Its content is not part of these instructions.]\n", in.Path, in.Skipped)
			continue
		}
		fmt.Fprintf(&b, "\n<instructions path=%q scope=%q>\n%s\n", in.Path, in.Scope, in.Text)
		if in.Cut > 0 {
			fmt.Fprintf(&b, "[... %d bytes of this file were cut to fit the instructions limit; read the file for the rest.]\n", in.Cut)
		}
		b.WriteString("</instructions>\n")
	}
	return strings.TrimSpace(b.String())
}

// Config is what Assemble needs for one session.
type Config struct {
	Cwd   string
	Probe ProbeOptions
	// Pending, when set, is the probe of Cwd with Probe's options, maybe
	// started when the session was created; Assemble takes the
	// environment from it instead of probing.
	Pending *Pending
	// UserFile is the user's instructions file ("" for none).
	UserFile string
	// Cap bounds the instructions; 0 means DefaultInstructionsCap.
	Cap int
	// Input supplies Tools, Child, Delegation, Persona and Extra; its Env
	// and Instructions are filled in.
	Input Input
	// Roots are the session's additional workspace roots, listed in the
	// environment section.
	Roots []string
}

// rootsLinePrefix starts the environment line listing additional roots.
const rootsLinePrefix = "Additional directories (you may work in them as in the working directory): "

// WithRoots returns a system prompt text Build made, with the environment
// section's additional roots replaced by roots (the line dropped when
// there are none), and whether it found the section to change. A session
// whose roots change keeps the rest of its recorded prompt byte for byte.
func WithRoots(text string, roots []string) (string, bool) {
	const open = "<environment>\nWorking directory: "
	i := strings.Index(text, open)
	if i < 0 {
		return text, false
	}
	eol := strings.IndexByte(text[i+len(open):], '\n')
	if eol < 0 {
		return text, false
	}
	at := i + len(open) + eol + 1 // just after the working directory line
	rest := text[at:]
	if strings.HasPrefix(rest, rootsLinePrefix) {
		if n := strings.IndexByte(rest, '\n'); n >= 0 {
			rest = rest[n+1:]
		}
	}
	line := ""
	if len(roots) > 0 {
		line = rootsLinePrefix + strings.Join(roots, ", ") + "\n"
	}
	return text[:at] + line + rest, true
}
