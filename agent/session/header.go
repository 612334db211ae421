package session

import (
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
// rejected.
func ParseHeaderLine(line []byte, id string) (Header, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Header{}, &HeaderError{"", "session header is not a JSON object: " + err.Error()}
	}
	if raw == nil {
		return Header{}, &HeaderError{"", "session header is not a JSON object"}
	}
	if _, ok := raw["sandboxMode"]; ok {
		return Header{}, &HeaderError{"sandboxMode", "session header uses retired policy baseline fields"}
	}
	if _, ok := raw["approvalPolicy"]; ok {
		return Header{}, &HeaderError{"approvalPolicy", "session header uses retired policy baseline fields"}
	}
	var typ string
	if err := json.Unmarshal(raw["type"], &typ); err != nil || typ != "session" {
		return Header{}, &HeaderError{"type", `session header line must have "type":"session"`}
	}
	var h Header
	for key, val := range raw {
		var err error
		switch key {
		case "type":
		case "version":
			h.Version, err = intField(val)
		case "id":
			err = json.Unmarshal(val, &h.ID)
		case "createdAt":
			var n int
			n, err = intField(val)
			h.CreatedAt = int64(n)
		case "cwd":
			err = json.Unmarshal(val, &h.Cwd)
			if err == nil && h.Cwd == "" {
				err = errors.New("must not be empty")
			}
		case "parentSession":
			err = json.Unmarshal(val, &h.ParentSession)
			if err == nil && h.ParentSession == "" {
				err = errors.New("must not be empty")
			}
		case "seedLength":
			h.SeedLength, err = intField(val)
		case "origin":
			err = json.Unmarshal(val, &h.Origin)
			if err == nil && h.Origin != OriginSubagent {
				err = errors.New(`must be "subagent"`)
			}
		case "delegationDepth":
			h.DelegationDepth, err = intField(val)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return Header{}, &HeaderError{key, fmt.Sprintf("session header field %q: %v", key, err)}
		}
	}
	for _, required := range []string{"version", "id", "createdAt", "delegationDepth"} {
		if _, ok := raw[required]; !ok {
			return Header{}, &HeaderError{required, fmt.Sprintf("session header is missing %q", required)}
		}
	}
	if err := h.Validate(id); err != nil {
		return Header{}, err
	}
	return h, nil
}

// intField decodes a JSON number that must be a non-negative safe integer.
func intField(val json.RawMessage) (int, error) {
	var f float64
	if err := json.Unmarshal(val, &f); err != nil {
		return 0, errors.New("must be a number")
	}
	if f < 0 || f > maxSafeInteger || f != math.Trunc(f) {
		return 0, errors.New("must be a non-negative safe integer")
	}
	return int(f), nil
}
