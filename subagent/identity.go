package subagent

// This file defines the subagent identity projection unit (key "subagent")
// and the registration of the units the subagent runtime owns. See
// subagent-contract.md §1.5.1.

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/acp-agent/acp-agent/subagent/budgets"
	"strconv"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Key and state version of the identity unit.
const (
	KeyIdentity     = "subagent"
	IdentityVersion = 2
)

// Identity is the projected identity of a subagent child: its mode, its
// label and the seq of the descriptor event it came from. Seq proves
// provenance: Seq >= header.SeedLength means the child's own suffix, not an
// ancestor's descriptor replayed in a fork seed.
type Identity struct {
	Mode Mode
	// Label is always set for a continuable child. For a one-shot child ""
	// means no label (an empty one-shot label is treated as absent).
	Label string
	Seq   int64
	// Worktree is the child's worktree (isolation worktree), nil
	// otherwise. Rows without it decode as before, so the unit's version
	// did not change: no earlier build wrote an isolated child.
	Worktree *WorktreeRecord
}

// MarshalJSON renders {"mode","label"?,"seq"}; a one-shot child without a
// label has no label key.
func (id Identity) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	mode, _ := json.Marshal(string(id.Mode))
	b.WriteString(`{"mode":`)
	b.Write(mode)
	if id.Mode == ModeContinuable || id.Label != "" {
		label, _ := json.Marshal(id.Label)
		b.WriteString(`,"label":`)
		b.Write(label)
	}
	if w := id.Worktree; w != nil {
		enc, _ := json.Marshal(w)
		b.WriteString(`,"worktree":`)
		b.Write(enc)
	}
	b.WriteString(`,"seq":` + strconv.FormatInt(id.Seq, 10) + `}`)
	return b.Bytes(), nil
}

var errBadIdentity = errors.New("subagent identity value is malformed")

// DecodeIdentity reads an identity value as found in a projection snapshot
// or a cache row. A missing value or null is (nil, nil): no identity. A value
// of the wrong shape is an error.
func DecodeIdentity(raw json.RawMessage) (*Identity, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if id := decodeCanonicalIdentity(raw); id != nil {
		return id, nil
	}
	return decodeIdentityJSON(raw)
}

// decodeIdentityJSON is DecodeIdentity through encoding/json, without the
// canonical fast path (the fuzz test holds the two to the same answers).
func decodeIdentityJSON(raw []byte) (*Identity, error) {
	var w struct {
		Mode  *string `json:"mode"`
		Label *string `json:"label"`
		Seq   *int64  `json:"seq"`
		// Worktree is decoded strictly: a present worktree must be a
		// whole record.
		Worktree *WorktreeRecord `json:"worktree"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, errBadIdentity
	}
	if w.Mode == nil || w.Seq == nil || (Mode(*w.Mode) != ModeOneShot && Mode(*w.Mode) != ModeContinuable) {
		return nil, errBadIdentity
	}
	if Mode(*w.Mode) == ModeContinuable && w.Label == nil {
		return nil, errBadIdentity
	}
	if wt := w.Worktree; wt != nil && (wt.Repo == "" || wt.Path == "" || wt.Branch == "" || wt.Base == "") {
		return nil, errBadIdentity
	}
	id := &Identity{Mode: Mode(*w.Mode), Seq: *w.Seq, Worktree: w.Worktree}
	if w.Label != nil {
		id.Label = *w.Label
	}
	return id, nil
}

// decodeCanonicalIdentity decodes exactly the bytes MarshalJSON writes for
// a label without escapes, {"mode":…[,"label":"…"],"seq":n}, or returns
// nil (the caller then uses encoding/json). A listing decodes one identity
// per cold child from the cache or the index; this skips reflection.
func decodeCanonicalIdentity(raw []byte) *Identity {
	var id Identity
	rest, ok := bytes.CutPrefix(raw, []byte(`{"mode":"`))
	if !ok {
		return nil
	}
	switch {
	case bytes.HasPrefix(rest, []byte(ModeContinuable+`"`)):
		id.Mode, rest = ModeContinuable, rest[len(ModeContinuable)+1:]
	case bytes.HasPrefix(rest, []byte(ModeOneShot+`"`)):
		id.Mode, rest = ModeOneShot, rest[len(ModeOneShot)+1:]
	default:
		return nil
	}
	if label, ok := bytes.CutPrefix(rest, []byte(`,"label":"`)); ok {
		end := bytes.IndexByte(label, '"')
		if end < 0 || !utf8.Valid(label[:end]) {
			return nil
		}
		for _, c := range label[:end] {
			if c < 0x20 || c == '\\' {
				return nil
			}
		}
		id.Label, rest = string(label[:end]), label[end+1:]
	} else if id.Mode == ModeContinuable {
		return nil
	}
	digits, ok := bytes.CutPrefix(rest, []byte(`,"seq":`))
	if !ok || len(digits) < 2 || len(digits) > 19 || digits[len(digits)-1] != '}' {
		return nil
	}
	digits = digits[:len(digits)-1]
	if len(digits) > 1 && digits[0] == '0' {
		return nil
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil
		}
		id.Seq = id.Seq*10 + int64(c-'0')
	}
	return &id
}

// IdentityUnit returns the "subagent" projection unit. It is last-wins over
// subagent/descriptor events: each one is parsed on its own; a valid one
// replaces the identity, a malformed or unknown-version one resets it to no
// identity. Its view is the Identity or null. It never fails.
func IdentityUnit() projection.Unit {
	return projection.Fold[*Identity]{
		Name:    KeyIdentity,
		Version: IdentityVersion,
		Step: func(cur *Identity, ev session.Event) (*Identity, error) {
			if ev.Type != session.TypeDescriptor {
				return cur, nil
			}
			d, err := ParseDescriptor(ev.Data)
			if err != nil || d == nil {
				return nil, nil
			}
			return &Identity{Mode: d.Mode, Label: d.Label, Seq: ev.Seq, Worktree: d.Worktree}, nil
		},
		Render: func(cur *Identity) (any, error) {
			if cur == nil {
				return nil, nil
			}
			return *cur, nil
		},
	}
}

// RegisterProjections registers the units the subagent runtime owns, the
// identity unit, projection.Timing, the usage unit and the question unit,
// on reg. The returned function unregisters them all.
func RegisterProjections(reg *projection.Registry) (unregister func(), err error) {
	unID, err := reg.Register(IdentityUnit())
	if err != nil {
		return nil, err
	}
	unTiming, err := reg.Register(projection.Timing())
	if err != nil {
		unID()
		return nil, err
	}
	unUsage, err := reg.Register(budgets.Unit())
	if err != nil {
		unTiming()
		unID()
		return nil, err
	}
	unExternal, err := reg.Register(ExternalUnit())
	if err != nil {
		unUsage()
		unTiming()
		unID()
		return nil, err
	}
	unQuestion, err := reg.Register(QuestionUnit())
	if err != nil {
		unExternal()
		unUsage()
		unTiming()
		unID()
		return nil, err
	}
	return func() { unQuestion(); unExternal(); unUsage(); unTiming(); unID() }, nil
}
