package acpschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schema files, unchanged (README.md).
var (
	//go:embed v1/schema.json
	stableJSON []byte
	//go:embed v1/schema.unstable.json
	unstableJSON []byte
)

// File names one of the two schema files.
type File string

const (
	// Unstable is schema.unstable.json: stable plus unstable shapes. The
	// subagent shapes are only here.
	Unstable File = "schema.unstable.json"
	// Stable is schema.json: the stable methods and types only.
	Stable File = "schema.json"
)

// loaded is one parsed schema file and its compiled definitions.
type loaded struct {
	doc  map[string]any
	comp *jsonschema.Compiler
	err  error

	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

var (
	loadOnce sync.Once
	files    map[File]*loaded
)

func load(f File) (*loaded, error) {
	loadOnce.Do(func() {
		files = map[File]*loaded{}
		for name, raw := range map[File][]byte{Stable: stableJSON, Unstable: unstableJSON} {
			l := &loaded{compiled: map[string]*jsonschema.Schema{}}
			files[name] = l
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				l.err = fmt.Errorf("acpschema: parse %s: %w", name, err)
				continue
			}
			l.doc, _ = doc.(map[string]any)
			l.comp = jsonschema.NewCompiler()
			if err := l.comp.AddResource(string(name), doc); err != nil {
				l.err = fmt.Errorf("acpschema: load %s: %w", name, err)
			}
		}
	})
	l, ok := files[f]
	if !ok {
		return nil, fmt.Errorf("acpschema: no schema file %q", f)
	}
	return l, l.err
}

// schema returns the compiled $def name of file f.
func schema(f File, def string) (*jsonschema.Schema, error) {
	l, err := load(f)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.compiled[def]; ok {
		return s, nil
	}
	defs, _ := l.doc["$defs"].(map[string]any)
	if _, ok := defs[def]; !ok {
		return nil, fmt.Errorf("acpschema: %s has no $def %q", f, def)
	}
	s, err := l.comp.Compile(string(f) + "#/$defs/" + def)
	if err != nil {
		return nil, fmt.Errorf("acpschema: compile %s: %w", def, err)
	}
	l.compiled[def] = s
	return s, nil
}

// Defs lists the $def names of file f.
func Defs(f File) ([]string, error) {
	l, err := load(f)
	if err != nil {
		return nil, err
	}
	defs, _ := l.doc["$defs"].(map[string]any)
	names := make([]string, 0, len(defs))
	for k := range defs {
		names = append(names, k)
	}
	return names, nil
}

// ValidateIn checks doc (one JSON value) against $def def of file f.
func ValidateIn(f File, def string, doc []byte) error {
	s, err := schema(f, def)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("acpschema: not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s does not match %s: %w", truncate(doc), def, err)
	}
	return nil
}

// Validate checks doc against $def def of the unstable file (a superset
// of the stable one), e.g. Validate("SubagentUpdate", b).
func Validate(def string, doc []byte) error { return ValidateIn(Unstable, def, doc) }

// DefForMethod names the $def of a JSON-RPC message's params (request or
// notification, isRequest telling which) or, with response, of its result,
// from the schema's x-method annotations: "session/update" →
// SessionNotification, "session/request_permission" →
// RequestPermissionRequest (or …Response).
func DefForMethod(method string, isRequest, response bool) (string, error) {
	l, err := load(Unstable)
	if err != nil {
		return "", err
	}
	defs, _ := l.doc["$defs"].(map[string]any)
	var found []string
	for name, d := range defs {
		m, _ := d.(map[string]any)
		if m["x-method"] != method {
			continue
		}
		switch {
		case response:
			if strings.HasSuffix(name, "Response") {
				found = append(found, name)
			}
		case isRequest:
			if strings.HasSuffix(name, "Request") {
				found = append(found, name)
			}
		default:
			if strings.HasSuffix(name, "Notification") {
				found = append(found, name)
			}
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("acpschema: method %q (request %v, response %v) names %d $defs %v", method, isRequest, response, len(found), found)
	}
	return found[0], nil
}

// ValidateMessage checks one JSON-RPC request or notification line (as
// either side writes it): its params against the $def its method names.
// A response (no method) is not checked here: its shape depends on the
// request (use ValidateResult).
func ValidateMessage(line []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("acpschema: not a JSON-RPC message: %w", err)
	}
	if m.Method == "" {
		return fmt.Errorf("acpschema: %s is not a request or notification", truncate(line))
	}
	isRequest := len(m.ID) > 0 && string(m.ID) != "null"
	def, err := DefForMethod(m.Method, isRequest, false)
	if err != nil {
		return err
	}
	params := m.Params
	if len(params) == 0 {
		params = []byte("null")
	}
	return Validate(def, params)
}

// ValidateResult checks the result of a response to method.
func ValidateResult(method string, result []byte) error {
	def, err := DefForMethod(method, true, true)
	if err != nil {
		return err
	}
	return Validate(def, result)
}

// Check marshals v (or takes it as is when it is []byte or
// json.RawMessage) and reports a mismatch with $def def of the unstable
// file as a test error.
func Check(t testing.TB, def string, v any) {
	t.Helper()
	doc, err := marshal(v)
	if err != nil {
		t.Errorf("acpschema: marshal for %s: %v", def, err)
		return
	}
	if err := Validate(def, doc); err != nil {
		t.Error(err)
	}
}

// CheckMessage reports a request or notification line whose params do not
// match its method's $def as a test error.
func CheckMessage(t testing.TB, line []byte) {
	t.Helper()
	if err := ValidateMessage(line); err != nil {
		t.Error(err)
	}
}

func marshal(v any) ([]byte, error) {
	switch b := v.(type) {
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	}
	return json.Marshal(v)
}

func truncate(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
