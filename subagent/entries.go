package subagent

// This file defines the rows of the durable subagent catalog and their JSON
// shapes (subagent-contract.md §3.5).

import (
	"bytes"
	"encoding/json"
	"github.com/acp-agent/acp-agent/agent/budget"
	"strconv"
)

// EntryKind discriminates catalog rows.
type EntryKind string

// Row kinds.
const (
	KindChild      EntryKind = "child"
	KindDiagnostic EntryKind = "diagnostic"
)

// Activity is a process-local snapshot of a child's corpus record: running
// when its session is in the live store, inactive when it is only on disk.
// It is neither agent status, an outcome nor a promise of resumability.
type Activity string

// Activities.
const (
	ActivityRunning  Activity = "running"
	ActivityInactive Activity = "inactive"
)

// Reason says why a candidate became a diagnostic row.
type Reason string

// Diagnostic reasons. ReasonUnsupported is part of the vocabulary but never
// produced by the current listing (an unknown descriptor version lists as
// corrupt).
const (
	ReasonCorrupt     Reason = "corrupt"
	ReasonUnsupported Reason = "unsupported"
	ReasonUnavailable Reason = "unavailable"
)

// ListEntry is one catalog row: a child (Mode, Label, Activity,
// HasChildren set) or a diagnostic (Reason set). A one-shot child's Label
// may be "" (no label); a continuable child always has one.
type ListEntry struct {
	Kind        EntryKind
	ID          string
	Mode        Mode
	Label       string
	Activity    Activity
	HasChildren bool
	Reason      Reason
	// Detail says more about a diagnostic, for people ("names a missing
	// parent X", "named pipe, not a session file"); may be "".
	Detail string
	// Worktree is the recorded worktree of an isolated child (nil
	// otherwise); InspectWorktree tells what it holds now.
	Worktree *WorktreeRecord
	// Damage, on a child row, says what its log lost though it reads (a
	// repair dropped lines), as the storage words it; "" otherwise.
	Damage string
	// Usage, on a child row, is what the child itself spent (its own
	// log's responses, from the subagentUsage projection; cost at the
	// catalog's prices, absent when not known); nil when it reported no
	// usage or the projection is not registered.
	Usage *budget.Usage
	// Question, on a child row, is its last question refused at its
	// deadline (the subagentQuestion projection); nil when none was.
	Question *Question
	// External, on an external child's row, is what its log says of its
	// agent (the cause its last turn failed with, why it cannot be
	// resumed, the children it announced); nil for our own children.
	External *External
	// Nested, on a row of mode nested (a child an external agent
	// announced), is what the agent said of it.
	Nested *NestedChild
}

// DescendantEntry is a row of the descendant walk: a ListEntry positioned
// under its durable direct parent at Depth edges below the root.
type DescendantEntry struct {
	ListEntry
	ParentID string
	Depth    int
}

// MarshalJSON renders {"kind","id","mode","label"?,"activity","hasChildren",
// "worktree"?,"damage"?,"external"?,"nested"?,"usage"?,"question"?} for a
// child and {"kind","id","reason","detail"?} for a diagnostic.
func (e ListEntry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	e.write(&b)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalJSON renders the ListEntry keys followed by "parentId" and
// "depth".
func (e DescendantEntry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	e.write(&b)
	b.WriteString(`,"parentId":`)
	writeString(&b, e.ParentID)
	b.WriteString(`,"depth":` + strconv.Itoa(e.Depth) + `}`)
	return b.Bytes(), nil
}

// write renders the object without its closing brace.
func (e ListEntry) write(b *bytes.Buffer) {
	b.WriteString(`{"kind":`)
	writeString(b, string(e.Kind))
	b.WriteString(`,"id":`)
	writeString(b, e.ID)
	if e.Kind == KindDiagnostic {
		b.WriteString(`,"reason":`)
		writeString(b, string(e.Reason))
		b.WriteString(detailJSON(e.Detail))
		return
	}
	b.WriteString(`,"mode":`)
	writeString(b, string(e.Mode))
	if e.Mode == ModeContinuable || e.Label != "" {
		b.WriteString(`,"label":`)
		writeString(b, e.Label)
	}
	b.WriteString(`,"activity":`)
	writeString(b, string(e.Activity))
	b.WriteString(`,"hasChildren":` + strconv.FormatBool(e.HasChildren))
	if e.Worktree != nil {
		enc, _ := json.Marshal(e.Worktree)
		b.WriteString(`,"worktree":`)
		b.Write(enc)
	}
	if e.Damage != "" {
		b.WriteString(`,"damage":`)
		writeString(b, e.Damage)
	}
	if x := e.External; x != nil && (x.Failure != "" || x.CannotResume != "") {
		enc, _ := json.Marshal(External{Failure: x.Failure, CannotResume: x.CannotResume})
		b.WriteString(`,"external":`)
		b.Write(enc)
	}
	if n := e.Nested; n != nil {
		enc, _ := json.Marshal(struct {
			Description string `json:"description,omitempty"`
			State       string `json:"state,omitempty"`
			StopReason  string `json:"stopReason,omitempty"`
		}{n.Description, n.State, n.StopReason})
		b.WriteString(`,"nested":`)
		b.Write(enc)
	}
	if u := e.Usage; u != nil {
		v := *u
		if !v.CostKnown() {
			v.Cost = 0 // never a made-up cost
		}
		enc, _ := json.Marshal(v)
		b.WriteString(`,"usage":`)
		b.Write(enc)
	}
	if q := e.Question; q != nil {
		enc, _ := json.Marshal(q)
		b.WriteString(`,"question":`)
		b.Write(enc)
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}
