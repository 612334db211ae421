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

	"github.com/acp-agent/acp-agent/internal/beneath"
)

// Codes of Error.
const (
	// CodeInvalidSettings is a settings file that could not be used:
	// nothing of it applies.
	CodeInvalidSettings = "INVALID_SETTINGS"
	// CodeIgnoredSetting is one setting of a project file that a project
	// may not make (it would loosen the user's choice): that setting is
	// left out, the rest of the file applies.
	CodeIgnoredSetting = "SETTING_IGNORED"
)

// Error is a settings file that could not be used (CodeInvalidSettings:
// nothing of it applies) or one setting of it that was left out
// (CodeIgnoredSetting).
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
	// Context sets the models' context window and compaction threshold;
	// honoured at the user level only.
	Context Context `json:"context,omitzero"`
	// Subagents limits background subagents; honoured at the user level
	// only.
	Subagents Subagents `json:"subagents,omitzero"`
	// Prices overrides the built-in list prices, per model id
	// ("provider/model" or a bare model id, matched as a prefix), in USD
	// per million tokens; honoured at the user level only.
	Prices map[string]Price `json:"prices,omitempty"`
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

// Context is the context policy of the models: Window (tokens) applies
// to every model, Windows to one model each ("PROVIDER/MODEL", as --model
// names it) and wins over Window; CompactThreshold is the fraction of the
// window at which a session compacts. Zero values leave the built-in
// table and the default threshold in force; the command-line flags win
// over both.
type Context struct {
	Window           int            `json:"window,omitempty"`
	Windows          map[string]int `json:"windows,omitempty"`
	CompactThreshold float64        `json:"compactThreshold,omitempty"`
}

// Subagents is the person's limit on background subagents: at most
// MaxBackground continuable children of one root session run at once (0:
// the built-in default).
//
// MaxTokens and MaxCostUSD bound the whole tree of one root session (the
// root's own model calls and every descendant's); reaching one ends the
// tree's work with stop reason "budget". StallTimeout is how long a
// running child may go without model output or tool progress before its
// parent is told (a Go duration, "5m" by default; "0" or "off" never),
// and InterruptStalled also interrupts it then. QuestionTimeout is how
// long a child's question to the person may wait for an answer before it
// is refused (a Go duration, "10m" by default; "0" or "off" waits for
// ever); a question a background child asks while no prompt runs waits
// for the next prompt within it.
type Subagents struct {
	MaxBackground    int     `json:"maxBackground,omitempty"`
	MaxTokens        int     `json:"maxTokens,omitempty"`
	MaxCostUSD       float64 `json:"maxCostUsd,omitempty"`
	StallTimeout     string  `json:"stallTimeout,omitempty"`
	InterruptStalled bool    `json:"interruptStalled,omitempty"`
	QuestionTimeout  string  `json:"questionTimeout,omitempty"`
}

// Price is a model's price in USD per million tokens: input, cached
// input (a prompt-cache hit) and output.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cachedInput"`
	Output      float64 `json:"output"`
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
	f, _, err := readFile(path)
	return f, err
}

// readFile is ReadFile that also returns the content (to place later
// reports on their lines). A non-empty root is the directory the file
// must resolve beneath (internal/beneath): a project's file symlinked out
// of the project is refused with the reason.
func readFile(path string, root ...string) (File, []byte, error) {
	var data []byte
	var err error
	if len(root) > 0 && root[0] != "" {
		data, err = beneath.ReadFile(root[0], path, 0)
	} else {
		data, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, nil, nil
	}
	if err != nil {
		return File{}, nil, &Error{Code: CodeInvalidSettings, File: path, Message: err.Error(), Err: err}
	}
	f, err := Parse(path, data)
	return f, data, err
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
	if err := checkContext(f.Context); err != nil {
		return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: lineOf(data, err.field), Message: err.msg}
	}
	if n := f.Subagents.MaxBackground; n < 0 {
		return File{}, &Error{Code: CodeInvalidSettings, File: path, Line: lineOf(data, "maxBackground"),
			Message: fmt.Sprintf("subagents.maxBackground must be a positive number of subagents, not %d", n)}
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

type fieldError struct{ field, msg string }

// checkContext checks the context section's values.
func checkContext(c Context) *fieldError {
	if c.Window < 0 {
		return &fieldError{"window", fmt.Sprintf("context.window must be a positive number of tokens, not %d", c.Window)}
	}
	if c.CompactThreshold < 0 || c.CompactThreshold > 1 {
		return &fieldError{"compactThreshold", fmt.Sprintf("context.compactThreshold must be a fraction between 0 and 1, not %g", c.CompactThreshold)}
	}
	for name, w := range c.Windows {
		if p, m, ok := strings.Cut(name, "/"); !ok || p == "" || m == "" {
			return &fieldError{name, fmt.Sprintf("context.windows: %q is not PROVIDER/MODEL", name)}
		}
		if w <= 0 {
			return &fieldError{name, fmt.Sprintf("context.windows: %q must be a positive number of tokens, not %d", name, w)}
		}
	}
	return nil
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
