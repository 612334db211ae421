package subagent

// This file defines the model-facing list_agents tool (subagent-contract.md
// §4.1): the catalog projected to continuable children and diagnostics,
// with status from the live agent registry.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// ListAgentsName is the tool name.
const ListAgentsName = delegation.ToolListAgents

// Lister is the catalog as the list_agents tool consumes it (*Catalog
// implements it).
type Lister interface {
	ListChildren(ctx context.Context, parentID string) ([]ListEntry, error)
	ListDescendants(ctx context.Context, rootID string) ([]DescendantEntry, error)
}

// AgentStatus reports the live agent registry's view of an id: live is
// false when no Agent is registered under it; status is then meaningless.
// Otherwise status is "running" or "idle".
type AgentStatus interface {
	AgentStatus(id string) (status string, live bool)
}

var _ Lister = (*Catalog)(nil)

// Statuses shown by list_agents.
const (
	StatusRunning = "running"
	StatusIdle    = "idle"
	StatusReady   = "ready"
	// StatusQueued: a start waiting for a background slot (no session
	// yet).
	StatusQueued = "queued"
	// StatusStarting: a background start whose call returned and whose
	// worktree is being checked out (no session yet).
	StatusStarting = "starting"
)

// StartingLister is the runtime's view of the background starts being
// made after their call returned (*Runtime implements it).
type StartingLister interface {
	Starting(parentID string) []StartingStart
}

// QueueLister is the runtime's view of the starts waiting for a slot
// (*Runtime implements it).
type QueueLister interface {
	Queued(parentID string) []QueuedStart
}

// WorktreeInspector tells what a recorded worktree holds now (*Runtime
// implements it).
type WorktreeInspector interface {
	WorktreeState(ctx context.Context, rec WorktreeRecord) WorktreeState
}

// Scopes of list_agents.
const (
	ScopeChildren    = "children"
	ScopeDescendants = "descendants"
)

const listAgentsParameters = `{"type":"object","properties":{"scope":{"type":"string","description":"children (default) lists direct children only; descendants walks the complete tree below you.","enum":["children","descendants"]}}}`

const listAgentsDescription = "List the continuable background subagents you started, each with its durable id and label. " +
	"Use it to remember which ones exist, not to check whether they are done — you are told when one finishes. " +
	"The status comes from the live agent registry: running means the agent is working right now, idle means it is " +
	"loaded but between turns (possibly waiting on agents it started itself), and ready means it exists only in storage — " +
	"resumable, not terminal, and not a result waiting to be picked up. A `send_message` to a direct child starts a new " +
	"turn of the same conversation whatever its status. The list is a snapshot, not a promise of delivery: `send_message` " +
	"makes the authoritative check and can still fail. Children that could not be read are reported as diagnostics " +
	"rather than left out. With scope `descendants` the whole tree below you is listed in stable pre-order, each entry " +
	"annotated with the id of its durable direct parent and its depth. Only depth-1 entries accept `send_message`; " +
	"deeper entries are candidates for `interrupt_agent` only."

// ListAgents is the list_agents tool. It is safe for concurrent use.
type ListAgents struct {
	lister Lister
	agents AgentStatus
}

var _ tool.Tool = (*ListAgents)(nil)

// NewListAgents returns the tool over a catalog and the live agent
// registry. A nil agents shows every child as ready.
func NewListAgents(lister Lister, agents AgentStatus) *ListAgents {
	return &ListAgents{lister: lister, agents: agents}
}

// Spec returns the tool's name, description and parameter schema.
func (t *ListAgents) Spec() model.ToolSpec {
	return model.ToolSpec{Name: ListAgentsName, Description: listAgentsDescription, Parameters: json.RawMessage(listAgentsParameters)}
}

// Kind returns "search".
func (t *ListAgents) Kind() string { return "search" }

// AgentEntry is one entry of the list_agents value: a continuable child
// (Label, Status) or a diagnostic (Reason). Parent and Depth are set in the
// descendants scope only.
type AgentEntry struct {
	Kind   EntryKind
	ID     string
	Label  string
	Status string
	Reason Reason
	// Positioned is true in the descendants scope, where Parent and Depth
	// are part of the entry.
	Positioned bool
	Parent     string
	Depth      int
	// Worktree describes an isolated child's worktree ("" without one).
	Worktree string
	rec      *WorktreeRecord
	// Usage is what the child spent ("" when it reported no usage);
	// Stalled marks a running child the watchdog found quiet.
	Usage   string
	Stalled bool
	// Note says what an external child's agent left it in ("failed: …",
	// "cannot resume: …"); "" otherwise.
	Note string
	// Question is its last question refused at its deadline ("question
	// refused: <reason>"; "" when none was).
	Question string
}

// StallReporter is the optional AgentStatus extension saying whether a
// running child is stalled (Runtime implements it).
type StallReporter interface {
	Stalled(id string) bool
}

// MarshalJSON renders {"kind","id","label","status"[,"parent","depth"]} or
// {"kind","id","reason"[,"parent","depth"]}.
func (e AgentEntry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"kind":`)
	writeString(&b, string(e.Kind))
	b.WriteString(`,"id":`)
	writeString(&b, e.ID)
	if e.Kind == KindDiagnostic {
		b.WriteString(`,"reason":`)
		writeString(&b, string(e.Reason))
	} else {
		b.WriteString(`,"label":`)
		writeString(&b, e.Label)
		b.WriteString(`,"status":`)
		writeString(&b, e.Status)
		if e.Worktree != "" {
			b.WriteString(`,"worktree":`)
			writeString(&b, e.Worktree)
		}
		if e.Usage != "" {
			b.WriteString(`,"usage":`)
			writeString(&b, e.Usage)
		}
		if e.Stalled {
			b.WriteString(`,"stalled":true`)
		}
		if e.Note != "" {
			b.WriteString(`,"note":`)
			writeString(&b, e.Note)
		}
		if e.Question != "" {
			b.WriteString(`,"question":`)
			writeString(&b, e.Question)
		}
	}
	if e.Positioned {
		b.WriteString(`,"parent":`)
		writeString(&b, e.Parent)
		b.WriteString(`,"depth":` + strconv.Itoa(e.Depth))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Execute lists the caller's children (or descendants) and renders them
// one per line. Catalog errors are returned as they are, so a
// *SubagentError keeps its code in the tool result.
func (t *ListAgents) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	if inv.Caller == nil {
		return tool.Result{}, errors.New("list_agents requires a calling agent (the call has no caller)")
	}
	scope, err := parseScope(inv.Arguments)
	if err != nil {
		return tool.Result{}, err
	}
	rootID := inv.Caller.SessionID()
	var entries []AgentEntry
	switch scope {
	case ScopeDescendants:
		rows, err := t.lister.ListDescendants(ctx, rootID)
		if err != nil {
			return tool.Result{}, err
		}
		for _, r := range rows {
			if e, ok := t.project(r.ListEntry); ok {
				e.Positioned, e.Parent, e.Depth = true, r.ParentID, r.Depth
				entries = append(entries, e)
			}
		}
	default:
		rows, err := t.lister.ListChildren(ctx, rootID)
		if err != nil {
			return tool.Result{}, err
		}
		for _, r := range rows {
			if e, ok := t.project(r); ok {
				entries = append(entries, e)
			}
		}
	}
	if q, ok := t.agents.(QueueLister); ok {
		for _, s := range q.Queued(rootID) {
			// A message waiting to resume a listed child marks its row.
			if i := slices.IndexFunc(entries, func(e AgentEntry) bool { return e.ID == s.ID && e.Kind == KindChild }); i >= 0 {
				entries[i].Status = StatusQueued
				continue
			}
			e := AgentEntry{Kind: KindChild, ID: s.ID, Label: s.Label, Status: StatusQueued}
			if scope == ScopeDescendants {
				e.Positioned, e.Parent, e.Depth = true, rootID, 1
			}
			entries = append(entries, e)
		}
	}
	if sl, ok := t.agents.(StartingLister); ok {
		listed := map[string]bool{}
		for _, e := range entries {
			listed[e.ID] = true
		}
		for _, s := range sl.Starting(rootID) {
			if listed[s.ID] {
				continue // its session exists already
			}
			e := AgentEntry{Kind: KindChild, ID: s.ID, Label: s.Label, Status: StatusStarting, Worktree: "checking out its worktree"}
			if scope == ScopeDescendants {
				e.Positioned, e.Parent, e.Depth = true, rootID, 1
			}
			entries = append(entries, e)
		}
	}
	if wi, ok := t.agents.(WorktreeInspector); ok {
		for i := range entries {
			if entries[i].rec != nil {
				entries[i].Worktree = wi.WorktreeState(ctx, *entries[i].rec).Describe()
			}
		}
	}
	if entries == nil {
		entries = []AgentEntry{}
	}
	return tool.TextResult(RenderAgents(entries), entries), nil
}

// parseScope resolves the arguments to a scope; absent means children.
func parseScope(args json.RawMessage) (string, error) {
	var a struct {
		Scope *string `json:"scope"`
	}
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return "", &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error(), Err: err}
		}
	}
	if a.Scope == nil {
		return ScopeChildren, nil
	}
	switch *a.Scope {
	case ScopeChildren, ScopeDescendants:
		return *a.Scope, nil
	}
	return "", &tool.Error{Code: tool.CodeInvalidArgs, Message: `invalid arguments: scope must be "children" or "descendants"`}
}

// project keeps diagnostics and continuable children; one-shot children
// are dropped (send_message is meaningless for them). Status comes from the
// live agent registry only, never from the row's activity.
func (t *ListAgents) project(r ListEntry) (AgentEntry, bool) {
	switch {
	case r.Kind == KindDiagnostic:
		return AgentEntry{Kind: KindDiagnostic, ID: r.ID, Reason: r.Reason}, true
	case r.Mode == ModeNested && r.Nested != nil:
		// A child an external child's agent announced: listed with the
		// state the agent gave it, never messaged.
		status := "nested"
		if r.Nested.State != "" {
			status += ", " + r.Nested.State
		}
		return AgentEntry{Kind: KindChild, ID: r.ID, Label: r.Label, Status: status}, true
	case r.Mode != ModeContinuable:
		return AgentEntry{}, false
	}
	status := StatusReady
	if t.agents != nil {
		if s, live := t.agents.AgentStatus(r.ID); live {
			status = StatusIdle
			if s == StatusRunning {
				status = StatusRunning
			}
		}
	}
	e := AgentEntry{Kind: KindChild, ID: r.ID, Label: r.Label, Status: status, rec: r.Worktree}
	if r.Usage != nil {
		e.Usage = r.Usage.String()
	}
	e.Note = r.External.Note()
	if r.Question != nil {
		e.Question = r.Question.String()
	}
	if sr, ok := t.agents.(StallReporter); ok && status == StatusRunning {
		e.Stalled = sr.Stalled(r.ID)
	}
	return e, true
}

// RenderAgents renders entries as list_agents text: one line per entry,
// "<id> [<status>] — <label>" or "<id> [diagnostic: <reason>]", with
// " parent=<id> depth=<n>" after the bracket for positioned entries, and
// "(no subagents)" when there are none.
func RenderAgents(entries []AgentEntry) string {
	if len(entries) == 0 {
		return "(no subagents)"
	}
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.ID)
		if e.Kind == KindDiagnostic {
			b.WriteString(" [diagnostic: " + string(e.Reason) + "]")
		} else {
			status := e.Status
			if e.Stalled {
				status += ", stalled"
			}
			b.WriteString(" [" + status + "]")
		}
		if e.Positioned {
			b.WriteString(" parent=" + e.Parent + " depth=" + strconv.Itoa(e.Depth))
		}
		if e.Kind != KindDiagnostic {
			b.WriteString(" \u2014 " + e.Label)
		}
		if e.Worktree != "" {
			b.WriteString(" (" + e.Worktree + ")")
		}
		if e.Usage != "" {
			b.WriteString(" (used " + e.Usage + ")")
		}
		if e.Note != "" {
			b.WriteString(" (" + e.Note + ")")
		}
		if e.Question != "" {
			b.WriteString(" (" + e.Question + ")")
		}
	}
	return b.String()
}
