package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Code of a settings file that could not be used.
const CodeInvalidSettings = "INVALID_SETTINGS"

// Error is a settings file that could not be used: nothing of it applies.
type Error struct {
	Code    string
	File    string
	Line    int // 1-based; 0 when unknown
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// File is the content of one settings file.
type File struct {
	Permissions Permissions `json:"permissions"`
	Env         Env         `json:"env"`
	Sandbox     Sandbox     `json:"sandbox"`
	// Projects holds rules scoped to one project directory (absolute
	// path); honoured at the user level only. "Always allow" answers are
	// saved here.
	Projects map[string]Permissions `json:"projects,omitempty"`
}

// Permissions are the rule lists of one file.
type Permissions struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Env adjusts the environment given to commands: Include keeps variables
// the secret filter would drop, Exclude drops more (name patterns, "*"
// wildcards, case-insensitive).
type Env struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// Sandbox configures the sandbox of local commands (wired by the sandbox
// owner). Enabled is a pointer so a file that does not mention it leaves
// the other level's choice alone.
type Sandbox struct {
	Enabled       *bool    `json:"enabled,omitempty"`
	WritablePaths []string `json:"writablePaths,omitempty"`
	Network       *bool    `json:"network,omitempty"`
}

// UserPath is the user-level settings file: $XDG_CONFIG_HOME, else
// $HOME/.config; "" when neither is known.
func UserPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "acp-agent", "settings.json")
}

// ProjectPath is the project-level settings file of cwd.
func ProjectPath(cwd string) string { return filepath.Join(cwd, ".acp-agent", "settings.json") }

// ReadFile reads and checks one settings file. A missing file is empty
// (nil error); anything else wrong is an *Error naming file and line.
func ReadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, nil
	}
	if err != nil {
		return File{}, &Error{Code: CodeInvalidSettings, File: path, Message: err.Error(), Err: err}
	}
	return Parse(path, data)
}

// Parse decodes and checks one settings file's content.
func Parse(path string, data []byte) (File, error) {
	var f File
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: errorLine(data, err), Message: describe(err), Err: err}
	}
	if dec.More() {
		return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: lineAt(data, int(dec.InputOffset())), Message: "more than one JSON value"}
	}
	lists := []Permissions{f.Permissions}
	for dir, p := range f.Projects {
		if !filepath.IsAbs(dir) {
			return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: lineOf(data, dir),
				Message: fmt.Sprintf("projects: %q is not an absolute directory", dir)}
		}
		lists = append(lists, p)
	}
	for _, p := range lists {
		for _, list := range []struct {
			name  string
			rules []string
		}{{"allow", p.Allow}, {"ask", p.Ask}, {"deny", p.Deny}} {
			for _, r := range list.rules {
				if _, err := ParseRule(r); err != nil {
					return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: lineOf(data, r),
						Message: fmt.Sprintf("permissions.%s: %v", list.name, err), Err: err}
				}
			}
		}
	}
	return f, nil
}

func describe(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "not valid JSON: " + se.Error()
	case errors.As(err, &te):
		return fmt.Sprintf("%s must be a %s, not a JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

// errorLine finds the line of a decoding error.
func errorLine(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return lineAt(data, int(se.Offset))
	case errors.As(err, &te):
		return lineAt(data, int(te.Offset))
	}
	if _, field, ok := strings.Cut(err.Error(), "unknown field "); ok {
		return lineOf(data, strings.Trim(field, `"`))
	}
	return 0
}

func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// lineOf is the line of the first occurrence of s as a JSON string.
func lineOf(data []byte, s string) int {
	q, _ := json.Marshal(s)
	if i := bytes.Index(data, q); i >= 0 {
		return lineAt(data, i)
	}
	return 0
}
