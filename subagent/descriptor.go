package subagent

// This file defines the durable subagent descriptor (the subagent/descriptor
// event payload): its write-side snapshot and its strict read-side parser.
// See subagent-contract.md §1.4.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
)

// DescriptorVersion is the only descriptor format this build reads and
// writes. Older and newer versions read as "no descriptor".
const DescriptorVersion = 2

// Mode is a subagent's durable lifecycle mode.
type Mode string

// Modes.
const (
	ModeOneShot     Mode = delegation.ModeOneShot
	ModeContinuable Mode = delegation.ModeContinuable
)

// Descriptor is the durable identity of a session-backed subagent, written
// once into the child's log as the payload of a subagent/descriptor event.
//
// Optional strings are absent when empty: a one-shot Label, AgentProvider,
// AgentModel and Persona are omitted from the payload when "". A continuable
// Label is required and always written, even when empty.
type Descriptor struct {
	Version       int
	Mode          Mode
	Provider      string
	Label         string
	AgentProvider string
	AgentModel    string
	Persona       string
	ToolFilter    *ToolFilter
	// Isolation and Worktree (continuable only): a child isolated in a git
	// worktree records it here before its first turn, so a restart, a cold
	// resume and the listings know where it works. Isolation is omitted
	// when none.
	Isolation Isolation
	Worktree  *WorktreeRecord
	// PermissionMode is the session mode the child's permission
	// decisions use, as its agent definition asked ("" to follow the
	// root session's), and PermissionScope who wrote that definition
	// (policy.GrantProject or policy.GrantUser): a project's may only
	// narrow the root's mode (policy.ChildMode). Both modes record them,
	// so a cold resume decides as the child was started.
	PermissionMode  string
	PermissionScope string
	// CallID is the parent's tool call that started the child (its
	// delegation): editors that follow a child's own stream find the call
	// it belongs to, also after a restart. Absent in older logs.
	CallID string
}

// ToolFilter restricts a continuable child's tools. A nil slice is absent; a
// non-nil empty slice is present (and allows or denies nothing). At least
// one of the two must be present.
type ToolFilter struct {
	Allow []string
	Deny  []string
}

const descPrefix = "persisted subagent descriptor "

// DescriptorError is a malformed current-version descriptor payload.
type DescriptorError struct{ Message string }

func (e *DescriptorError) Error() string { return e.Message }

func descErr(format string, args ...any) error {
	return &DescriptorError{Message: descPrefix + fmt.Sprintf(format, args...)}
}

// ErrNotSerializable is returned by Snapshot for a descriptor that would not
// survive a JSON round trip unchanged (invalid UTF-8 in a string).
var ErrNotSerializable = errors.New("subagent descriptor is not losslessly JSON-serializable")

// Snapshot validates d and renders the event payload, keys in the order
// version, mode, provider, label, agentProvider, agentModel, persona,
// toolFilter, isolation, worktree, permissionMode, permissionScope, callId, absent
// optionals omitted (a one-shot descriptor has no agentProvider,
// agentModel, persona or toolFilter). Version is always written as
// DescriptorVersion.
func (d Descriptor) Snapshot() (json.RawMessage, error) {
	if d.Mode != ModeOneShot && d.Mode != ModeContinuable {
		return nil, fmt.Errorf(`subagent descriptor mode must be "one-shot" or "continuable", got %q`, d.Mode)
	}
	if d.Mode == ModeOneShot && (d.AgentProvider != "" || d.AgentModel != "" || d.Persona != "" || d.ToolFilter != nil) {
		return nil, errors.New("a one-shot subagent descriptor records only provider, label, isolation and permission mode")
	}
	if err := checkPermission(d.PermissionMode, d.PermissionScope); err != nil {
		return nil, err
	}
	if f := d.ToolFilter; f != nil && f.Allow == nil && f.Deny == nil {
		return nil, errors.New("subagent descriptor toolFilter must declare allow and/or deny")
	}
	if (d.Isolation == IsolationWorktree) != (d.Worktree != nil) {
		return nil, errors.New("subagent descriptor worktree must be recorded exactly when isolation is worktree")
	}
	if d.Isolation != "" && d.Isolation != IsolationNone && d.Isolation != IsolationWorktree {
		return nil, fmt.Errorf("subagent descriptor isolation %q is unknown", d.Isolation)
	}
	strs := []string{d.Provider, d.Label, d.AgentProvider, d.AgentModel, d.Persona, d.PermissionMode, d.PermissionScope, d.CallID}
	if w := d.Worktree; w != nil {
		strs = append(strs, w.Repo, w.Path, w.Branch, w.Base)
	}
	if f := d.ToolFilter; f != nil {
		strs = append(append(strs, f.Allow...), f.Deny...)
	}
	for _, s := range strs {
		if !utf8.ValidString(s) {
			return nil, ErrNotSerializable
		}
	}
	return json.Marshal(d)
}

// MarshalJSON renders the payload (see Snapshot, which also validates).
func (d Descriptor) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"version":`)
	b.WriteString(strconv.Itoa(DescriptorVersion))
	field := func(k, v string) {
		b.WriteString(`,"` + k + `":`)
		enc, _ := json.Marshal(v)
		b.Write(enc)
	}
	field("mode", string(d.Mode))
	field("provider", d.Provider)
	if d.Label != "" || d.Mode == ModeContinuable {
		field("label", d.Label)
	}
	if d.AgentProvider != "" {
		field("agentProvider", d.AgentProvider)
	}
	if d.AgentModel != "" {
		field("agentModel", d.AgentModel)
	}
	if d.Persona != "" {
		field("persona", d.Persona)
	}
	if f := d.ToolFilter; f != nil {
		b.WriteString(`,"toolFilter":{`)
		sep := ""
		for _, part := range []struct {
			key  string
			list []string
		}{{"allow", f.Allow}, {"deny", f.Deny}} {
			if part.list == nil {
				continue
			}
			enc, err := json.Marshal(part.list)
			if err != nil {
				return nil, err
			}
			b.WriteString(sep + `"` + part.key + `":`)
			b.Write(enc)
			sep = ","
		}
		b.WriteByte('}')
	}
	if d.Isolation == IsolationWorktree {
		field("isolation", string(d.Isolation))
	}
	if w := d.Worktree; w != nil {
		b.WriteString(`,"worktree":{"repo":`)
		enc, _ := json.Marshal(w.Repo)
		b.Write(enc)
		for _, f := range []struct{ k, v string }{{"path", w.Path}, {"branch", w.Branch}, {"base", w.Base}} {
			enc, _ := json.Marshal(f.v)
			b.WriteString(`,"` + f.k + `":`)
			b.Write(enc)
		}
		b.WriteByte('}')
	}
	if d.PermissionMode != "" {
		field("permissionMode", d.PermissionMode)
		field("permissionScope", d.PermissionScope)
	}
	if d.CallID != "" {
		field("callId", d.CallID)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// checkPermission validates a descriptor's permission mode and scope:
// both absent, or a known mode and a known scope.
func checkPermission(mode, scope string) error {
	if mode == "" && scope == "" {
		return nil
	}
	if !policy.Known(policy.Mode(mode)) {
		return fmt.Errorf("subagent descriptor permissionMode %q is unknown", mode)
	}
	if scope != policy.GrantProject && scope != policy.GrantUser {
		return fmt.Errorf(`subagent descriptor permissionScope must be %q or %q, got %q`, policy.GrantProject, policy.GrantUser, scope)
	}
	return nil
}

// member is one key of a JSON object, in document order.
type member struct {
	key string
	raw json.RawMessage
}

// object is a decoded JSON object that remembers key order. A repeated key
// keeps its first position and its last value, as JSON.parse does.
type object []member

func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.raw, true
		}
	}
	return nil, false
}

// decodeObject decodes raw as a JSON object. ok is false when raw is valid
// JSON of another kind; err is set when raw is not valid JSON.
func decodeObject(raw []byte) (obj object, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, false, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, false, err
		}
		replaced := false
		for i := range obj {
			if obj[i].key == key {
				obj[i].raw, replaced = val, true
				break
			}
		}
		if !replaced {
			obj = append(obj, member{key, val})
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("trailing data after JSON object")
	}
	return obj, true, nil
}

// jsonString decodes raw as a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if len(raw) >= 2 && raw[len(raw)-1] == '"' && plainString(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), true // what json.Unmarshal makes of it, without its cost
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// plainString reports whether b, the inside of a JSON string, needs no
// unescaping: no quote, backslash or control byte, and valid UTF-8
// (encoding/json replaces invalid bytes).
func plainString(b []byte) bool {
	for _, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// stringList decodes raw as a JSON array of strings. The result is non-nil
// for an empty array.
func stringList(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := jsonString(it)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

var (
	oneShotKeys = map[string]bool{"version": true, "mode": true, "provider": true, "label": true,
		"isolation": true, "worktree": true, "permissionMode": true, "permissionScope": true, "callId": true}
	continuableKeys = map[string]bool{"version": true, "mode": true, "provider": true, "label": true,
		"agentProvider": true, "agentModel": true, "persona": true, "toolFilter": true,
		"isolation": true, "worktree": true, "permissionMode": true, "permissionScope": true, "callId": true}
)

// ParseDescriptor decodes a subagent/descriptor payload, checking it in the
// exact order of subagent-contract.md §1.4. An unknown version is not an
// error: it returns (nil, nil), "no supported descriptor". A malformed
// current-version payload returns a *DescriptorError whose message starts
// with "persisted subagent descriptor ". It never panics.
func ParseDescriptor(raw json.RawMessage) (*Descriptor, error) {
	obj, ok, err := decodeObject(raw)
	if err != nil || !ok {
		return nil, descErr("payload must be an object")
	}
	vraw, _ := obj.get("version")
	if len(vraw) == 0 || !isNumber(vraw) {
		return nil, descErr("version must be a number")
	}
	// Any other number, including one out of float range, is an unknown
	// version: "no supported descriptor", not an error.
	if v, _ := strconv.ParseFloat(string(vraw), 64); v != DescriptorVersion {
		return nil, nil
	}
	mraw, _ := obj.get("mode")
	mode, _ := jsonString(mraw)
	if Mode(mode) != ModeOneShot && Mode(mode) != ModeContinuable {
		return nil, descErr(`mode must be "one-shot" or "continuable"`)
	}
	allowed := oneShotKeys
	if Mode(mode) == ModeContinuable {
		allowed = continuableKeys
	}
	for _, m := range obj {
		if !allowed[m.key] {
			return nil, descErr("payload has unknown field %q", m.key)
		}
	}
	d := &Descriptor{Version: DescriptorVersion, Mode: Mode(mode)}
	praw, _ := obj.get("provider")
	if d.Provider, ok = jsonString(praw); !ok {
		return nil, descErr("provider must be a string")
	}
	lraw, hasLabel := obj.get("label")
	if d.Mode == ModeOneShot {
		if hasLabel {
			if d.Label, ok = jsonString(lraw); !ok {
				return nil, descErr("label must be a string")
			}
		}
		if err := parseTail(obj, d); err != nil {
			return nil, err
		}
		return d, nil
	}
	if d.Label, ok = jsonString(lraw); !ok {
		return nil, descErr("label must be a string")
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"agentProvider", &d.AgentProvider}, {"agentModel", &d.AgentModel}, {"persona", &d.Persona}} {
		if raw, present := obj.get(f.key); present {
			if *f.dst, ok = jsonString(raw); !ok {
				return nil, descErr("%s must be a string", f.key)
			}
		}
	}
	if fraw, present := obj.get("toolFilter"); present {
		if d.ToolFilter, err = parseToolFilter(fraw); err != nil {
			return nil, err
		}
	}
	if err := parseTail(obj, d); err != nil {
		return nil, err
	}
	return d, nil
}

// parseTail decodes the keys both modes share after the contract's own:
// isolation, worktree, permissionMode, permissionScope and callId.
func parseTail(obj object, d *Descriptor) error {
	if iraw, present := obj.get("isolation"); present {
		iso, ok := jsonString(iraw)
		if !ok || (Isolation(iso) != IsolationNone && Isolation(iso) != IsolationWorktree) {
			return descErr(`isolation must be "none" or "worktree"`)
		}
		d.Isolation = Isolation(iso)
	}
	if wraw, present := obj.get("worktree"); present {
		var err error
		if d.Worktree, err = parseWorktree(wraw); err != nil {
			return err
		}
	}
	if (d.Isolation == IsolationWorktree) != (d.Worktree != nil) {
		return descErr("worktree must be recorded exactly when isolation is worktree")
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"permissionMode", &d.PermissionMode}, {"permissionScope", &d.PermissionScope}, {"callId", &d.CallID}} {
		if raw, present := obj.get(f.key); present {
			var ok bool
			if *f.dst, ok = jsonString(raw); !ok {
				return descErr("%s must be a string", f.key)
			}
		}
	}
	if err := checkPermission(d.PermissionMode, d.PermissionScope); err != nil {
		return descErr("%s", strings.TrimPrefix(err.Error(), "subagent descriptor "))
	}
	return nil
}

// parseWorktree decodes a continuable descriptor's worktree record: every
// key a non-empty string.
func parseWorktree(raw json.RawMessage) (*WorktreeRecord, error) {
	obj, isObj, err := decodeObject(raw)
	if err != nil || !isObj {
		return nil, descErr("worktree must be an object")
	}
	for _, m := range obj {
		switch m.key {
		case "repo", "path", "branch", "base":
		default:
			return nil, descErr("worktree has unknown field %q", m.key)
		}
	}
	w := &WorktreeRecord{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"repo", &w.Repo}, {"path", &w.Path}, {"branch", &w.Branch}, {"base", &w.Base}} {
		raw, _ := obj.get(f.key)
		v, ok := jsonString(raw)
		if !ok || v == "" {
			return nil, descErr("worktree.%s must be a non-empty string", f.key)
		}
		*f.dst = v
	}
	return w, nil
}

// parseToolFilter decodes a continuable descriptor's toolFilter.
func parseToolFilter(raw json.RawMessage) (*ToolFilter, error) {
	fobj, isObj, err := decodeObject(raw)
	if err != nil || !isObj {
		return nil, descErr("toolFilter must be an object")
	}
	for _, m := range fobj {
		if m.key != "allow" && m.key != "deny" {
			return nil, descErr("toolFilter has unknown field %q", m.key)
		}
	}
	tf := &ToolFilter{}
	for _, f := range []struct {
		key string
		dst *[]string
	}{{"allow", &tf.Allow}, {"deny", &tf.Deny}} {
		if raw, present := fobj.get(f.key); present {
			var ok bool
			if *f.dst, ok = stringList(raw); !ok {
				return nil, descErr("toolFilter.%s must be an array of strings", f.key)
			}
		}
	}
	if tf.Allow == nil && tf.Deny == nil {
		return nil, descErr("toolFilter must declare allow and/or deny")
	}
	return tf, nil
}

func isNumber(raw json.RawMessage) bool {
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// FoldFirst returns the descriptor of the first subagent/descriptor event in
// events (first wins), or nil when there is none or its version is not
// supported. Cold resume uses it over a child's own suffix
// (events[seedLength:]); listing uses the last-wins identity projection
// instead (subagent-contract.md §6 item 3).
func FoldFirst(events []session.Event) (*Descriptor, error) {
	for _, ev := range events {
		if ev.Type == session.TypeDescriptor {
			return ParseDescriptor(ev.Data)
		}
	}
	return nil, nil
}
