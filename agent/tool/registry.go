package tool

// This file defines Registry: the set of tools offered to one agent, with
// argument validation and the failure conventions of
// ../shared/spec/subagent-contract.md §4 (tool-runtime conventions).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Texts of the registry's own failures, as the model sees them.
const (
	textAbortedBeforeDispatch = "tool call aborted before dispatch"
	textAborted               = "tool call aborted"
)

// Registry is a set of tools keyed by name. Each tool's parameter schema is
// compiled once, when the tool is added. A nil *Registry is an empty
// registry. Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]*entry
}

// entry is one registered tool with its compiled schema. Entries are
// immutable once built, so restricted copies share them.
type entry struct {
	tool   Tool
	spec   model.ToolSpec
	schema *jsonschema.Schema // nil: the tool declares no parameters
}

// NewRegistry returns a registry holding tools. It fails if two tools share
// a name, a name is empty, or a parameter schema does not compile.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{entries: make(map[string]*entry, len(tools))}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t. It fails if the name is empty or taken, or the schema
// does not compile.
func (r *Registry) Add(t Tool) error {
	if r == nil {
		return errors.New("tool: Add on a nil registry")
	}
	e, err := newEntry(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = make(map[string]*entry)
	}
	if _, dup := r.entries[e.spec.Name]; dup {
		return fmt.Errorf("tool: duplicate tool name %q", e.spec.Name)
	}
	r.entries[e.spec.Name] = e
	return nil
}

func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, errors.New("tool: nil tool")
	}
	spec := t.Spec()
	if spec.Name == "" {
		return nil, errors.New("tool: tool with an empty name")
	}
	e := &entry{tool: t, spec: spec}
	params := bytes.TrimSpace(spec.Parameters)
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		return e, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("tool %q: parameter schema is not JSON: %w", spec.Name, err)
	}
	c := jsonschema.NewCompiler()
	loc := "mem://tool/" + spec.Name + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("tool %q: parameter schema: %w", spec.Name, err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("tool %q: parameter schema does not compile: %w", spec.Name, err)
	}
	e.schema = sch
	return e, nil
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	e := r.get(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

func (r *Registry) get(name string) *entry {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.entries[name]
}

// Len returns the number of tools.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

// Names returns the tool names in byte order.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Specs returns the tool specs sorted by name, the order offered to the
// model (stable, so requests are deterministic).
func (r *Registry) Specs() []model.ToolSpec {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	specs := make([]model.ToolSpec, 0, len(r.entries))
	for _, e := range r.entries {
		specs = append(specs, e.spec)
	}
	r.mu.RUnlock()
	slices.SortFunc(specs, func(a, b model.ToolSpec) int { return strings.Compare(a.Name, b.Name) })
	return specs
}

// With returns a new registry holding the tools for which keep returns
// true (all of them when keep is nil). Compiled schemas are shared; later
// changes to either registry do not affect the other.
func (r *Registry) With(keep func(name string) bool) *Registry {
	out := &Registry{entries: make(map[string]*entry)}
	if r == nil {
		return out
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for n, e := range r.entries {
		if keep == nil || keep(n) {
			out.entries[n] = e
		}
	}
	return out
}

// Clone returns an independent copy of r.
func (r *Registry) Clone() *Registry { return r.With(nil) }

// Execute runs one tool call and always returns a Result: an unknown tool,
// invalid arguments, a cancelled context, a tool error and a tool panic all
// become error results (IsError with a classified Error) the model sees.
// Execute runs the tool on the calling goroutine; a tool must honour ctx
// for cancellation to take effect.
func (r *Registry) Execute(ctx context.Context, inv Invocation) (res Result) {
	e := r.get(inv.Name)
	if e == nil {
		return ErrorResult(&Error{Code: CodeUnknownTool, Message: fmt.Sprintf("unknown tool %q", inv.Name)})
	}
	if ctx.Err() != nil {
		return ErrorResult(&Error{Code: CodeAbortedBeforeStart, Message: textAbortedBeforeDispatch, Err: context.Cause(ctx)})
	}
	if msg := e.validate(inv.Arguments); msg != "" {
		return ErrorResult(&Error{Code: CodeInvalidArgs, Message: "invalid arguments: " + msg})
	}
	if len(bytes.TrimSpace(inv.Arguments)) == 0 {
		inv.Arguments = json.RawMessage("{}")
	}
	defer func() {
		if p := recover(); p != nil {
			res = ErrorResult(&Error{
				Code:    CodeToolPanicked,
				Message: fmt.Sprintf("tool %q panicked: %v", inv.Name, p),
				Err:     &PanicError{Value: p, Stack: debug.Stack()},
			})
		}
	}()
	out, err := e.tool.Execute(ctx, inv)
	if ctx.Err() != nil {
		// Cancellation supersedes whatever the tool made of it, except its
		// display: what it did before it stopped (a file it changed, the
		// child it started) is still true and still shown.
		res := ErrorResult(&Error{Code: CodeAborted, Message: textAborted, Err: context.Cause(ctx)})
		res.Display = out.Display
		return res
	}
	if err != nil {
		return ErrorResult(err)
	}
	if out.IsError && out.Error == nil {
		out.Error = &session.ErrorInfo{Message: session.JoinText(out.Content, "\n"), Code: CodeToolFailed}
	}
	return out
}

// PanicError carries a recovered tool panic (kept for logs; the model only
// sees the message).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// validate checks raw arguments against the tool's schema and returns the
// rendered violations, or "" when they are acceptable. Absent arguments
// count as an empty object.
func (e *entry) validate(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return "arguments are not valid JSON: " + err.Error()
	}
	if e.schema == nil {
		if _, ok := v.(map[string]any); !ok {
			return "arguments must be a JSON object"
		}
		return ""
	}
	err = e.schema.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	return renderViolations(ve)
}

// renderViolations flattens a validation error into "at '<pointer>': <msg>"
// items, sorted and joined by "; " (the root location renders without a
// prefix).
func renderViolations(ve *jsonschema.ValidationError) string {
	var parts []string
	out := ve.BasicOutput()
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue // summary units repeat their causes
		}
		if u.InstanceLocation == "" {
			parts = append(parts, msg)
		} else {
			parts = append(parts, fmt.Sprintf("at '%s': %s", u.InstanceLocation, msg))
		}
	}
	if len(parts) == 0 {
		return strings.TrimSpace(ve.Error())
	}
	// The validator walks properties in map order: sort for stable text.
	slices.Sort(parts)
	parts = slices.Compact(parts)
	return strings.Join(parts, "; ")
}
