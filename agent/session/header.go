package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// FormatVersion is the only session format version this build reads and
// writes (pre-release: no migrations).
const FormatVersion = 0

// OriginSubagent is the only legal value of Header.Origin.
const OriginSubagent = "subagent"

// MaxIDLength bounds session ids so that an id always fits in a file name.
const MaxIDLength = 128

// Header is the immutable metadata of a session. It is kept outside the
// event log; persistence writes it as the first line of the session file.
//
// JSON key names and order follow subagent-contract.md §1.1. Optional fields
// are omitted when absent, never null; DelegationDepth is always written.
type Header struct {
	Version         int    `json:"version"`
	ID              string `json:"id"`
	CreatedAt       int64  `json:"createdAt"`
	Cwd             string `json:"cwd,omitempty"`
	ParentSession   string `json:"parentSession,omitempty"`
	SeedLength      int    `json:"seedLength,omitempty"`
	Origin          string `json:"origin,omitempty"`
	DelegationDepth int    `json:"delegationDepth"`
	// AdditionalDirectories are the extra workspace roots the session was
	// created with (ACP additionalDirectories): absolute, clean paths.
	AdditionalDirectories Dirs `json:"additionalDirectories,omitempty"`
}

// Dirs is a list of directories stored as one string (the paths joined by
// NUL, which no path contains), so a Header stays comparable with ==. It
// is a JSON array of strings on disk.
type Dirs string

// NewDirs returns the list dirs as Dirs.
func NewDirs(dirs []string) Dirs { return Dirs(strings.Join(dirs, "\x00")) }

// List returns the directories, nil for none.
func (d Dirs) List() []string {
	if d == "" {
		return nil
	}
	return strings.Split(string(d), "\x00")
}

// MarshalJSON writes the list as an array of strings.
func (d Dirs) MarshalJSON() ([]byte, error) {
	l := d.List()
	if l == nil {
		l = []string{}
	}
	return json.Marshal(l)
}

// UnmarshalJSON reads an array of strings; a path with a NUL is refused.
func (d *Dirs) UnmarshalJSON(b []byte) error {
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	for _, p := range l {
		if strings.ContainsRune(p, 0) {
			return errors.New("a directory contains a NUL byte")
		}
	}
	*d = NewDirs(l)
	return nil
}

// HeaderError reports an invalid header. Field names the offending key.
type HeaderError struct {
	Field   string
	Message string
}

func (e *HeaderError) Error() string { return e.Message }

// ErrInvalidID is wrapped by ValidateID failures.
var ErrInvalidID = errors.New("session: invalid session id")

// ValidateID reports whether id may name a session. Ids touch file paths,
// so they must be non-empty, bounded, valid UTF-8 and free of path
// separators, NUL, control characters and dot-only names.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidID, MaxIDLength)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidID)
	case strings.Trim(id, ".") == "":
		return fmt.Errorf("%w: %q is a dot-only name", ErrInvalidID, id)
	case strings.HasPrefix(id, "."):
		return fmt.Errorf("%w: %q starts with a dot", ErrInvalidID, id)
	}
	for _, r := range id {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f || r == ':' {
			return fmt.Errorf("%w: %q contains a separator or control character", ErrInvalidID, id)
		}
	}
	return nil
}

// Validate checks the header rules of subagent-contract.md §1.1 for a
// header claimed to belong to session id (pass "" to skip the id match).
func (h Header) Validate(id string) error {
	if h.Version != FormatVersion {
		return &HeaderError{"version", fmt.Sprintf("session header version must be %d, got %d", FormatVersion, h.Version)}
	}
	if err := ValidateID(h.ID); err != nil {
		return &HeaderError{"id", err.Error()}
	}
	if id != "" && h.ID != id {
		return &HeaderError{"id", fmt.Sprintf("session header id %q does not match session id %q", h.ID, id)}
	}
	if h.CreatedAt < 0 || h.CreatedAt > maxSafeInteger {
		return &HeaderError{"createdAt", "session header createdAt must be a non-negative safe integer"}
	}
	if h.Cwd != "" && !filepath.IsAbs(h.Cwd) {
		return &HeaderError{"cwd", fmt.Sprintf("session header cwd must be an absolute path, got %q", h.Cwd)}
	}
	if h.ParentSession != "" {
		if err := ValidateID(h.ParentSession); err != nil {
			return &HeaderError{"parentSession", "session header parentSession: " + err.Error()}
		}
	}
	if h.SeedLength < 0 {
		return &HeaderError{"seedLength", "session header seedLength must be a non-negative safe integer"}
	}
	if h.Origin != "" && h.Origin != OriginSubagent {
		return &HeaderError{"origin", `session header origin must be "subagent"`}
	}
	if h.DelegationDepth < 0 {
		return &HeaderError{"delegationDepth", "session header delegationDepth must be a non-negative safe integer"}
	}
	for _, d := range h.AdditionalDirectories.List() {
		if d == "" || !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return &HeaderError{"additionalDirectories", fmt.Sprintf("session header additionalDirectories must be clean absolute paths, got %q", d)}
		}
	}
	return nil
}

const maxSafeInteger = 1<<53 - 1

// headerLine is the on-disk shape of a header: the header fields preceded
// by "type":"session".
type headerLine struct {
	Type string `json:"type"`
	Header
}

// MarshalHeaderLine renders h as the JSON object persisted on the first line
// of a session file (without the trailing newline).
func MarshalHeaderLine(h Header) ([]byte, error) {
	return json.Marshal(headerLine{Type: "session", Header: h})
}

// ParseHeaderLine decodes and validates a persisted header line. The
// expected id may be "" to accept any valid id. Unknown keys, a missing
// delegationDepth, retired policy fields and non-integral numbers are
// rejected. It decodes into a struct (not a map): List calls it once per
// session file, so it is on the listing hot path.
// It is long because it checks every field of the header in turn, on
// one struct decoded once (the listing's hot path).
func ParseHeaderLine(line []byte, id string) (Header, error) {
	var raw struct {
		Type            *string          `json:"type"`
		Version         *json.Number     `json:"version"`
		ID              *string          `json:"id"`
		CreatedAt       *json.Number     `json:"createdAt"`
		Cwd             *string          `json:"cwd"`
		ParentSession   *string          `json:"parentSession"`
		SeedLength      *json.Number     `json:"seedLength"`
		Origin          *string          `json:"origin"`
		DelegationDepth *json.Number     `json:"delegationDepth"`
		AdditionalDirs  []string         `json:"additionalDirectories"`
		SandboxMode     *json.RawMessage `json:"sandboxMode"`
		ApprovalPolicy  *json.RawMessage `json:"approvalPolicy"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Header{}, &HeaderError{"", "session header is not a valid header object: " + err.Error()}
	}
	if dec.More() {
		return Header{}, &HeaderError{"", "session header line has trailing data"}
	}
	if raw.SandboxMode != nil {
		return Header{}, &HeaderError{"sandboxMode", "session header uses retired policy baseline fields"}
	}
	if raw.ApprovalPolicy != nil {
		return Header{}, &HeaderError{"approvalPolicy", "session header uses retired policy baseline fields"}
	}
	if raw.Type == nil || *raw.Type != "session" {
		return Header{}, &HeaderError{"type", `session header line must have "type":"session"`}
	}
	var h Header
	numbers := []struct {
		key      string
		val      *json.Number
		dst      *int
		required bool
	}{
		{"version", raw.Version, &h.Version, true},
		{"createdAt", raw.CreatedAt, nil, true},
		{"seedLength", raw.SeedLength, &h.SeedLength, false},
		{"delegationDepth", raw.DelegationDepth, &h.DelegationDepth, true},
	}
	for _, n := range numbers {
		if n.val == nil {
			if n.required {
				return Header{}, &HeaderError{n.key, fmt.Sprintf("session header is missing %q", n.key)}
			}
			continue
		}
		v, err := intField(*n.val)
		if err != nil {
			return Header{}, &HeaderError{n.key, fmt.Sprintf("session header field %q: %v", n.key, err)}
		}
		if n.dst != nil {
			*n.dst = v
		} else {
			h.CreatedAt = int64(v)
		}
	}
	if raw.ID == nil {
		return Header{}, &HeaderError{"id", `session header is missing "id"`}
	}
	h.ID = *raw.ID
	strs := []struct {
		key string
		val *string
		dst *string
	}{{"cwd", raw.Cwd, &h.Cwd}, {"parentSession", raw.ParentSession, &h.ParentSession}, {"origin", raw.Origin, &h.Origin}}
	for _, f := range strs {
		if f.val == nil {
			continue
		}
		if *f.val == "" {
			return Header{}, &HeaderError{f.key, fmt.Sprintf("session header field %q must not be empty", f.key)}
		}
		*f.dst = *f.val
	}
	if raw.AdditionalDirs != nil {
		if len(raw.AdditionalDirs) == 0 {
			return Header{}, &HeaderError{"additionalDirectories", "session header additionalDirectories must be omitted when empty"}
		}
		for _, p := range raw.AdditionalDirs {
			if strings.ContainsRune(p, 0) {
				return Header{}, &HeaderError{"additionalDirectories", "session header additionalDirectories: a path contains a NUL byte"}
			}
		}
		h.AdditionalDirectories = NewDirs(raw.AdditionalDirs)
	}
	if err := h.Validate(id); err != nil {
		return Header{}, err
	}
	return h, nil
}

// intField decodes a JSON number that must be a non-negative safe integer.
func intField(val json.Number) (int, error) {
	f, err := val.Float64()
	if err != nil {
		return 0, errors.New("must be a number")
	}
	if f < 0 || f > maxSafeInteger || f != math.Trunc(f) {
		return 0, errors.New("must be a non-negative safe integer")
	}
	return int(f), nil
}
