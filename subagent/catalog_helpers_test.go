package subagent_test

// This file defines the catalog test fixture: a real live session store and
// projection registry, and catDisk, the sanctioned counting fake of session
// persistence (in-memory JSONL-shaped logs with List/Inspect counters).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
)

type catLog struct {
	header session.Header
	events []session.Event
}

// catDisk is an in-memory SessionReader. Inspect validates the log like
// persistence does, so a malformed record makes it fail.
type catDisk struct {
	mu   sync.Mutex
	logs map[string]catLog

	listCalls    atomic.Int64
	inspectCalls atomic.Int64
	inspected    sync.Map // id → *atomic.Int64

	listHook     func(ctx context.Context) error
	inspectHook  func(ctx context.Context, id string) error
	afterInspect func(ctx context.Context, id string, h *session.Header) error
}

func newCatDisk() *catDisk { return &catDisk{logs: make(map[string]catLog)} }

func (d *catDisk) put(h session.Header, events []session.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.logs[h.ID] = catLog{h, append([]session.Event(nil), events...)}
}

// size is the byte length of the log as a JSONL file.
func (d *catDisk) size(id string) int64 {
	d.mu.Lock()
	l := d.logs[id]
	d.mu.Unlock()
	line, _ := session.MarshalHeaderLine(l.header)
	n := int64(len(line) + 1)
	for _, ev := range l.events {
		b, _ := json.Marshal(ev)
		n += int64(len(b) + 1)
	}
	return n
}

func (d *catDisk) List(ctx context.Context) ([]subagent.PersistedEntry, error) {
	d.listCalls.Add(1)
	if d.listHook != nil {
		if err := d.listHook(ctx); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	ids := make([]string, 0, len(d.logs))
	for id := range d.logs {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	slices.Sort(ids)
	out := make([]subagent.PersistedEntry, 0, len(ids))
	for _, id := range ids {
		d.mu.Lock()
		h := d.logs[id].header
		d.mu.Unlock()
		out = append(out, subagent.PersistedEntry{Header: h, Size: d.size(id)})
	}
	return out, nil
}

func (d *catDisk) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	d.inspectCalls.Add(1)
	c, _ := d.inspected.LoadOrStore(id, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if d.inspectHook != nil {
		if err := d.inspectHook(ctx, id); err != nil {
			return session.Header{}, nil, err
		}
	}
	d.mu.Lock()
	l, ok := d.logs[id]
	d.mu.Unlock()
	if !ok {
		return session.Header{}, nil, fmt.Errorf("session %s: not found", id)
	}
	if err := session.ValidateLog(l.events); err != nil {
		return session.Header{}, nil, err
	}
	h := l.header
	if d.afterInspect != nil {
		if err := d.afterInspect(ctx, id, &h); err != nil {
			return session.Header{}, nil, err
		}
	}
	return h, append([]session.Event(nil), l.events...), nil
}

func (d *catDisk) inspectedCount(id string) int64 {
	c, ok := d.inspected.Load(id)
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

// cacheFunc is a stub ProjectionCache.
type cacheFunc func(h session.Header, size int64) (map[string]json.RawMessage, error)

func (f cacheFunc) Get(h session.Header, size int64) (map[string]json.RawMessage, error) {
	return f(h, size)
}

type catFix struct {
	t     *testing.T
	store *session.Store
	reg   *projection.Registry
	disk  *catDisk
	cat   *subagent.Catalog
}

// newCatFix builds the real stack: a live store, a projection registry
// observing it with the runtime's units and the title unit, the counting
// disk and a catalog over them.
func newCatFix(t testing.TB) *catFix {
	store := session.NewStore(&session.DeterministicSources{Epoch: 1_000_000})
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(projection.Title()); err != nil {
		t.Fatal(err)
	}
	detach := reg.Attach(store)
	t.Cleanup(detach)
	disk := newCatDisk()
	f := &catFix{store: store, reg: reg, disk: disk}
	if tt, ok := t.(*testing.T); ok {
		f.t = tt
	}
	f.cat = &subagent.Catalog{Sessions: store, Projections: reg, Persisted: disk}
	return f
}

func descPayload(label string, version int) string {
	return fmt.Sprintf(`{"version":%d,"mode":"continuable","provider":"spawn","label":%q}`, version, label)
}

func oneShotPayload(label string) string {
	if label == "" {
		return `{"version":2,"mode":"one-shot","provider":"spawn"}`
	}
	return fmt.Sprintf(`{"version":2,"mode":"one-shot","provider":"spawn","label":%q}`, label)
}

func ev(typ string, seq int64, data string) session.Event {
	e := session.Event{Type: typ, Seq: seq, Time: 1000 + seq, Data: json.RawMessage(data)}
	if session.SurfaceTypes[typ] {
		e.SurfaceOp = session.AppendOp
	}
	return e
}

func userMsg(seq int64, text string) session.Event {
	return ev(session.TypeUserMessage, seq, fmt.Sprintf(`{"id":"m%d","role":"user","content":[{"type":"text","text":%q}],"source":{"kind":"user"}}`, seq, text))
}

// childEvents is the reference fixture log: turn/start, user/message,
// the descriptor d, turn/end.
func childEvents(d string) []session.Event {
	return []session.Event{
		ev(session.TypeTurnStart, 0, `{"turn":1}`),
		userMsg(1, "task"),
		ev(session.TypeDescriptor, 2, d),
		ev(session.TypeTurnEnd, 3, `{"turn":1,"reason":{"kind":"completed"}}`),
	}
}

func childHeader(id, parent string, createdAt int64) session.Header {
	return session.Header{ID: id, CreatedAt: createdAt, ParentSession: parent, Origin: session.OriginSubagent}
}

// author writes a persisted session directly.
func (f *catFix) author(h session.Header, events []session.Event) {
	f.disk.put(h, events)
}

// liveChild creates a live child session with turn/start and, unless
// descriptor is "", a descriptor (no Agent).
func (f *catFix) liveChild(h session.Header, descriptor string) *session.Session {
	s, err := f.store.Create(h, session.CreateOptions{})
	if err != nil {
		panic(err)
	}
	mustAppend(s, session.TypeTurnStart, `{"turn":1}`)
	if descriptor != "" {
		mustAppend(s, session.TypeDescriptor, descriptor)
	}
	return s
}

func mustAppend(s *session.Session, typ, data string) session.Event {
	e, err := s.AppendRaw(typ, json.RawMessage(data))
	if err != nil {
		panic(err)
	}
	return e
}

// runChild builds a continuable child the way the runtime does (descriptor
// in the creation seed, then one completed turn) and leaves it live.
func (f *catFix) runChild(h session.Header, label string) *session.Session {
	seed := []session.Event{ev(session.TypeDescriptor, 0, descPayload(label, 2))}
	s, err := f.store.Create(h, session.CreateOptions{Seed: seed})
	if err != nil {
		panic(err)
	}
	mustAppend(s, session.TypeTurnStart, `{"turn":1}`)
	if _, err := s.AppendRaw(session.TypeUserMessage, json.RawMessage(`{"id":"u1","role":"user","content":[{"type":"text","text":"task: `+label+`"}],"source":{"kind":"user"}}`)); err != nil {
		panic(err)
	}
	if _, err := s.AppendRaw(session.TypeAssistantMessage, json.RawMessage(`{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"text","text":"done"}],"source":{"kind":"model"}}}`)); err != nil {
		panic(err)
	}
	mustAppend(s, session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`)
	return s
}

// settle persists a live session to the disk and removes it from the
// store, as an Activation's disposal does.
func (f *catFix) settle(s *session.Session) {
	f.disk.put(s.Header(), s.MustEvents())
	if err := f.store.Remove(s.ID()); err != nil {
		panic(err)
	}
}

// settledChild is runChild + settle.
func (f *catFix) settledChild(h session.Header, label string) {
	f.settle(f.runChild(h, label))
}

// wantJSON compares the JSON rendering of got with want.
func wantJSON(t testing.TB, got any, want string) {
	t.Helper()
	have, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(want)); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if string(have) != buf.String() {
		t.Fatalf("rows\n got %s\nwant %s", have, buf.String())
	}
}

// hostileUnit fails once a descriptor labelled "poison me" was folded:
// by panicking in View when panics is true, else by returning an error.
func hostileUnit(panics bool) projection.Unit {
	return projection.Fold[bool]{
		Name:    "hostile",
		Version: 1,
		Step: func(p bool, ev session.Event) (bool, error) {
			return p || (ev.Type == session.TypeDescriptor && strings.Contains(string(ev.Data), "poison me")), nil
		},
		Render: func(p bool) (any, error) {
			if p && panics {
				panic("hostile view")
			}
			if p {
				return nil, fmt.Errorf("hostile view")
			}
			return p, nil
		},
	}
}
