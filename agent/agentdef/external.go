package agentdef

// This file parses the keys of an external agent: a definition that names
// a command speaking ACP instead of a model (ours only). The child runs
// that command as an ACP agent (package driver/external); the definition
// says what to start and what to pass, never a secret's value.

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// External is the command of an external agent definition.
type External struct {
	// Command is the program (a name looked up in PATH, or a path);
	// Args its arguments, passed as they are (no shell).
	Command string
	Args    []string
	// Env names the environment variables passed to it from the agent's
	// own environment (never values: a definition in a repository must
	// not carry a key). Nothing else of the environment is passed but
	// PATH, HOME and the locale.
	Env []string
	// LoadSession and Resume are the definition's preferences for a cold
	// resume: nil means "use it when the agent advertises it"; false
	// means never (the child then cannot be resumed after it settled).
	LoadSession, Resume *bool
}

// CommandLine is the command and its arguments as one line, each word
// quoted when it needs to be: what the person is shown before it runs.
func (e *External) CommandLine() string {
	if e == nil {
		return ""
	}
	words := append([]string{e.Command}, e.Args...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

// shellQuote quotes w for a POSIX shell when it is not a plain word.
func shellQuote(w string) string {
	if plainWord.MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseExternal decodes one of the external keys into def.External.
func parseExternal(def *Definition, f field) error {
	if def.External == nil {
		def.External = &External{}
	}
	e := def.External
	switch f.key {
	case "command":
		c, err := f.str()
		if err != nil {
			return err
		}
		if strings.TrimSpace(c) == "" || strings.ContainsRune(c, 0) {
			return fmt.Errorf("command must name a program")
		}
		e.Command = c
	case "args":
		if f.val.Kind != yaml.SequenceNode {
			return fmt.Errorf("args must be a list of strings")
		}
		e.Args = []string{}
		for _, it := range f.val.Content {
			if it.Kind != yaml.ScalarNode || isNull(it) || strings.ContainsRune(it.Value, 0) {
				return fmt.Errorf("args must be a list of strings")
			}
			e.Args = append(e.Args, it.Value)
		}
	case "env":
		list, err := f.list()
		if err != nil {
			return fmt.Errorf("env must be a list of variable names")
		}
		for _, n := range list {
			if strings.Contains(n, "=") {
				return fmt.Errorf("env: %q: name the variables to pass, never their values", n)
			}
			if !envName.MatchString(n) {
				return fmt.Errorf("env: %q is not a variable name", n)
			}
		}
		e.Env = list
	case "loadSession", "resume":
		var b bool
		if f.val.Kind != yaml.ScalarNode || f.val.Tag != "!!bool" || f.val.Decode(&b) != nil {
			return fmt.Errorf("%s must be true or false", f.key)
		}
		if f.key == "loadSession" {
			e.LoadSession = &b
		} else {
			e.Resume = &b
		}
	}
	return nil
}

// checkExternal checks an external definition as a whole: a command, and
// none of the keys that only an agent of ours can honour. It returns the
// line to report.
func checkExternal(def *Definition, fields []field) (int, error) {
	if def.External == nil {
		return 0, nil
	}
	lineOf := func(key string) int {
		for _, f := range fields {
			if f.key == key {
				return f.line
			}
		}
		return 1
	}
	if def.External.Command == "" {
		return lineOf("args"), fmt.Errorf("args, env, loadSession and resume belong to an external agent, which needs a command")
	}
	for _, key := range []string{"model", "tools", "disallowedTools", "maxTurns"} {
		for _, f := range fields {
			if f.key == key {
				return f.line, fmt.Errorf("%s does not apply to an external agent (command %q): it runs its own model and tools", key, def.External.Command)
			}
		}
	}
	return 0, nil
}
