package subagent

// This file makes the catalog account for every child the parent knows:
// besides the children found by their headers, the parent's own
// delegation records name children, and one whose log is gone, unreadable
// or names another parent (or itself) gets a diagnostic row rather than
// being left out without a word.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
)

// ReasonMissing: the parent's log names a child whose log does not exist.
const ReasonMissing Reason = "missing"

// ProblemChecker is optionally implemented by a Catalog's Persisted
// reader: Problem says why the stored log of id has no readable header
// ("named pipe, not a session file", "empty file, no header", ...); ok is
// false when its header reads fine or it does not exist.
type ProblemChecker interface {
	Problem(ctx context.Context, id string) (problem string, ok bool)
}

// DamageDescriber is optionally implemented by a Catalog's Persisted
// reader: Describe words err, the failure to read a stored child's log,
// for its diagnostic row's Detail (what is damaged, in the storage's one
// wording of damage); "" when it has nothing to say.
type DamageDescriber interface {
	Describe(err error) string
}

// RepairDescriber is optionally implemented by a Catalog's Persisted
// reader: DescribeRepaired words the repair a child's log records (its
// session.Repaired summary) for the child row's Damage, so a repaired
// child is not listed as healthy.
type RepairDescriber interface {
	DescribeRepaired(id string, sum session.RepairedData) string
}

// namesChild is a byte check for the keys a delegation result names its
// child under (raw output, child link).
func namesChild(data []byte) bool {
	return bytes.Contains(data, []byte(`"subagentId"`)) || bytes.Contains(data, []byte(`"runId"`)) ||
		bytes.Contains(data, []byte(`"childSessionId"`))
}

// childNames collects the child ids a parent's delegation records name
// (the child link of each start tool's result, or its raw output), in log
// order, each once.
type childNames struct {
	ids  []string
	seen map[string]bool
	// pending are the starts the log records as queued (TypeQueued) and
	// not as unqueued, in log order; a started one is found by its
	// session.
	pending []QueuedRecord
	// nested are the children an external agent announced (the parent
	// is an external child).
	nested []NestedChild
}

func (c *childNames) add(id string) {
	if id != "" && !c.seen[id] && session.ValidateID(id) == nil {
		if c.seen == nil {
			c.seen = map[string]bool{}
		}
		c.seen[id] = true
		c.ids = append(c.ids, id)
	}
}

// fold adds the children that events name.
func (c *childNames) fold(events []session.Event) {
	for _, ev := range events {
		if ev.Type == TypeQueued || ev.Type == TypeUnqueued {
			c.queue(ev)
			continue
		}
		if ev.Type == TypeExternalNested {
			var n NestedChild
			if json.Unmarshal(ev.Data, &n) == nil && n.SessionID != "" {
				c.nested = mergeNested(c.nested, n)
			}
			continue
		}
		// Most results name no child: a byte check spares decoding them.
		if ev.Type != session.TypeToolResult || !namesChild(ev.Data) {
			continue
		}
		if id, ok := resultChild(ev.Data); ok {
			c.add(id)
		}
	}
}

// queue folds a queue record: a queued start becomes pending, an
// unqueued one leaves.
func (c *childNames) queue(ev session.Event) {
	var r QueuedRecord
	if json.Unmarshal(ev.Data, &r) != nil || session.ValidateID(r.SubagentID) != nil {
		return
	}
	c.pending = slices.DeleteFunc(c.pending, func(x QueuedRecord) bool { return x.SubagentID == r.SubagentID })
	if ev.Type == TypeQueued {
		c.pending = append(c.pending, r)
	}
}

// delegatedChildren returns the child ids the parent's delegation records
// name, in log order, each once.
func delegatedChildren(events []session.Event) parentNames {
	var c childNames
	c.fold(events)
	return parentNames{ids: c.ids, pending: c.pending, nested: c.nested}
}

// parentNames is what a parent's log says of its children: the ids its
// delegation records name and the queued starts still pending.
type parentNames struct {
	ids     []string
	pending []QueuedRecord
	nested  []NestedChild
}

// delegations is a Catalog's incremental index of the children each live
// parent's log names: a listing folds only the events appended since the
// previous one, so once warm it reads no storage (a live log's older part
// is evicted from memory). Derived and rebuildable: an entry starts over
// for a new live session under the same id. Safe for concurrent use.
type delegations struct {
	mu   sync.Mutex
	byID map[string]*liveNames
}

// liveNames is the index entry of one live parent.
type liveNames struct {
	sess  *session.Session // the session folded
	next  int              // seq of the first event not folded
	names childNames
}

// of returns the children the live parent sess names so far. Entries of
// sessions no longer live in st are dropped.
func (d *delegations) of(st *session.Store, sess *session.Session) (parentNames, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string]*liveNames{}
	}
	for id, n := range d.byID {
		if cur, ok := st.Get(id); !ok || cur != n.sess {
			delete(d.byID, id)
		}
	}
	n := d.byID[sess.ID()]
	if n == nil || n.sess != sess {
		n = &liveNames{sess: sess}
		d.byID[sess.ID()] = n
	}
	events, err := sess.EventsFrom(n.next)
	if err != nil {
		return parentNames{}, err
	}
	n.names.fold(events)
	if len(events) > 0 {
		n.next = int(events[len(events)-1].Seq) + 1
	}
	return parentNames{ids: slices.Clone(n.names.ids), pending: slices.Clone(n.names.pending), nested: slices.Clone(n.names.nested)}, nil
}

// resultChild returns the child a tool/result payload names: in its raw
// output (delegation.ResultChild's reading), else in its display's child
// link. Only the "raw" member, and the "display" member when raw names
// no child, are read, with a byte scan (objectMembers): a parent with
// many children has one result per child, and decoding each whole
// message made the parent's log the largest cost of listing its
// children. A result whose other members are ill-typed still names its
// child (a full decode would drop it): the catalog then accounts for one
// child more, never one less.
func resultChild(data json.RawMessage) (string, bool) {
	raw, display, ok := namingMembers(data)
	if !ok {
		return "", false
	}
	if id, ok := rawChild(raw); ok {
		return id, true
	}
	if len(display) == 0 || display[0] == 'n' {
		return "", false
	}
	meta, _ := memberValue(display, "meta", true)
	if id, ok := linkChild(meta); ok {
		return id, true
	}
	return "", false
}

// rawChild is delegation.ResultChild on the raw bytes of a start tool's
// output: {"kind":"continuable","subagentId":ID} or
// {"kind":"foreground","runId":ID} (names matched exactly, as in a map).
func rawChild(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", false
	}
	var kind, subagentID, runID []byte
	if !objectMembers(raw, func(key, value []byte) bool {
		switch string(key) {
		case "kind":
			kind = value
		case "subagentId":
			subagentID = value
		case "runId":
			runID = value
		}
		return bytes.IndexByte(key, '\\') < 0
	}) {
		// An escaped name (or bad JSON): read as a map.
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return "", false
		}
		kind, subagentID, runID = m["kind"], m["subagentId"], m["runId"]
	}
	var id string
	switch k, _ := jsonString(kind); k {
	case delegation.ResultContinuable:
		id, _ = jsonString(subagentID)
	case delegation.ResultForeground:
		id, _ = jsonString(runID)
	}
	return id, id != ""
}

// linkChild reads the child link (delegation.ChildLink) out of a display's
// _meta object.
func linkChild(meta []byte) (string, bool) {
	link, ok := memberValue(meta, delegation.MetaKey, false)
	if !ok {
		return "", false
	}
	idRaw, _ := memberValue(link, "childSessionId", false)
	id, _ := jsonString(idRaw)
	return id, id != ""
}

// memberValue returns the value of the member name of the JSON object
// obj (the last one of that name), matched exactly, as a map key, or
// with fold as encoding/json matches a struct field ("meta" only). ok is
// false when obj is not an object or holds no such member.
func memberValue(obj []byte, name string, fold bool) (value []byte, ok bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, false
	}
	scanned := objectMembers(obj, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false // an escaped name: decoded below
		}
		if string(key) == name || fold && bytes.EqualFold(key, []byte(name)) {
			value, ok = v, true
		}
		return true
	})
	if scanned {
		return value, ok
	}
	if fold {
		var d struct {
			Meta json.RawMessage `json:"meta"`
		}
		if name != "meta" || json.Unmarshal(obj, &d) != nil {
			return nil, false
		}
		return d.Meta, d.Meta != nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil, false
	}
	value, ok = m[name]
	return value, ok
}

// namingMembers returns the "raw" and "display" members of a tool/result
// payload, matching names as encoding/json matches struct fields (the
// last of equal names wins, case-insensitively). A payload the scan does
// not take (an escaped member name, bad JSON) is decoded by encoding/json
// instead. ok is false when the payload is not an object or its display
// is neither an object nor null (a full decode fails on it).
func namingMembers(data []byte) (raw, display []byte, ok bool) {
	scanned := objectMembers(data, func(key, value []byte) bool {
		switch {
		case bytes.IndexByte(key, '\\') >= 0:
			return false
		case bytes.EqualFold(key, []byte("raw")):
			raw = value
		case bytes.EqualFold(key, []byte("display")):
			display = value
		}
		return true
	})
	if !scanned {
		var d struct {
			Raw     json.RawMessage `json:"raw"`
			Display json.RawMessage `json:"display"`
		}
		if json.Unmarshal(data, &d) != nil {
			return nil, nil, false
		}
		raw, display = d.Raw, d.Display
	}
	if len(display) > 0 && display[0] != '{' && !bytes.Equal(display, []byte("null")) {
		return nil, nil, false
	}
	return raw, display, true
}

// objectMembers calls fn with the name (unquoted, still escaped) and the
// value bytes of each member of the JSON object data, in order, until fn
// returns false. It reports whether it reached the object's end; it
// checks the structure it walks, not every literal (event payloads were
// validated when they were read or made).
func objectMembers(data []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := skipJSONString(data, i)
		if end < 0 {
			return false
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		end = skipJSONValue(data, i)
		if end < 0 || !fn(key, data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(data, i+1)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipJSONString returns the index just past the string starting at
// b[i] (a quote), or -1.
func skipJSONString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipJSONValue returns the index just past the value starting at b[i],
// or -1.
func skipJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipJSONString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipJSONString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// parentChildren returns the children the parent's log names: live from
// the incremental index, else from the stored log. Nil when it cannot be
// read (the listing then rests on headers alone).
func (c *Catalog) parentChildren(ctx context.Context, co *corpus, parentID string) parentNames {
	r := co.records[parentID]
	switch {
	case r == nil:
		return parentNames{}
	case r.live != nil:
		names, err := c.delegated.of(c.Sessions, r.live)
		if err != nil {
			return parentNames{}
		}
		return names
	case c.Persisted == nil:
		return parentNames{}
	}
	_, events, err := c.Persisted.Inspect(ctx, parentID)
	if err != nil {
		return parentNames{}
	}
	return delegatedChildren(events)
}

// ReasonNotStarted: the parent's log records a start that waited for a
// background slot and never started (a restart cut it off).
const ReasonNotStarted Reason = "not-started"

// notStarted returns a row for each pending queued start of the parent's
// log that has no session and is not waiting in this process: its wait
// was cut off (the agent stopped) before it started.
func (c *Catalog) notStarted(co *corpus, pending []QueuedRecord, listed map[string]bool) []ListEntry {
	var out []ListEntry
	for _, p := range pending {
		if listed[p.SubagentID] || co.records[p.SubagentID] != nil || (c.Waiting != nil && c.Waiting(p.SubagentID)) {
			continue
		}
		detail := "not started: it was waiting for a background slot when the agent stopped, and never ran"
		if p.Label != "" {
			detail = fmt.Sprintf("%q %s", p.Label, detail)
		}
		out = append(out, ListEntry{Kind: KindDiagnostic, ID: p.SubagentID, Reason: ReasonNotStarted, Detail: detail})
	}
	return out
}

// unaccounted returns a diagnostic row for each child of names (the
// children the parent's log names, parentChildren) that listed holds no
// row for, with the reason in Detail.
func (c *Catalog) unaccounted(ctx context.Context, co *corpus, parentID string, names []string, listed map[string]bool) []ListEntry {
	var out []ListEntry
	for _, id := range names {
		if listed[id] || id == parentID {
			continue
		}
		var e ListEntry
		if r, ok := co.records[id]; ok {
			e = namedElsewhere(co, parentID, r)
		} else if pc, ok := c.Persisted.(ProblemChecker); ok {
			e = ListEntry{Kind: KindDiagnostic, ID: id}
			if problem, bad := pc.Problem(ctx, id); bad {
				e.Reason, e.Detail = ReasonUnavailable, problem
			} else {
				e.Reason, e.Detail = ReasonMissing, "its log does not exist"
			}
		} else {
			e = ListEntry{Kind: KindDiagnostic, ID: id, Reason: ReasonMissing, Detail: "its log is not listed"}
		}
		out = append(out, e)
	}
	return out
}

// namedElsewhere is the row of child r, which parentID's log names but
// whose header does not make it parentID's subagent: a corrupt diagnostic
// saying what its header says instead. Both listing scopes give a named
// child this row (ListChildren of parentID, and ListDescendants of a root
// whose walk reads parentID's log, even where the walk reaches the child
// under the parent its header names), so they agree on it.
func namedElsewhere(co *corpus, parentID string, r *record) ListEntry {
	e := ListEntry{Kind: KindDiagnostic, ID: r.header.ID, Reason: ReasonCorrupt}
	switch p := r.header.ParentSession; {
	case p == r.header.ID:
		e.Detail = "names itself as its parent"
	case p == "":
		e.Detail = "its log names no parent"
	case co.records[p] == nil:
		e.Detail = fmt.Sprintf("names a missing parent %s", p)
	case p != parentID:
		e.Detail = fmt.Sprintf("names another parent %s (delegated by %s)", p, parentID)
	default:
		e.Detail = "not a subagent session"
	}
	return e
}

// detailJSON renders the optional "detail" key of a diagnostic row.
func detailJSON(d string) string {
	if d == "" {
		return ""
	}
	b, _ := json.Marshal(d)
	return `,"detail":` + string(b)
}
