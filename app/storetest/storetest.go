package storetest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// WriteTitledSessions writes n settled sessions of about 1 KiB, each with
// a title, and their projection cache rows (as the app's checkpoints
// write them), dated an hour back.
func WriteTitledSessions(t testing.TB, dir string, n int) {
	w := NewSettledWriter(t, dir)
	for i := range n {
		id := fmt.Sprintf("session-%05d", i)
		events := []session.Event{
			{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: session.MustData(session.TurnData{Turn: 1})},
			{Type: session.TypeUserMessage, Seq: 1, Time: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.Message{ID: "u", Role: session.RoleUser, Content: []session.Block{session.Text(strings.Repeat("please do the thing ", 30))}, Source: session.Source{Kind: session.SourceUser}})},
			{Type: session.TypeSessionTitle, Seq: 2, Time: 1, Data: session.MustData(session.TitleData{Title: fmt.Sprintf("Task number %d", i), Source: session.Source{Kind: "fallback"}})},
			{Type: session.TypeTurnEnd, Seq: 3, Time: 2, Data: session.MustData(session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})},
		}
		w.Write(session.Header{ID: id, CreatedAt: int64(1_700_000_000_000 + i), Cwd: "/work/project"}, events)
	}
}

// SettledWriter writes settled session logs into a data directory with
// their projection cache rows (as the app's checkpoints write them), each
// log dated an hour back (outside the index's racy window).
type SettledWriter struct {
	t     testing.TB
	sdir  string
	reg   *projection.Registry
	cache *projcache.Cache
	old   time.Time
}

// NewSettledWriter opens the projection cache of data directory dir.
func NewSettledWriter(t testing.TB, dir string) *SettledWriter {
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	// The units the app checkpoints at every turn end (app/catalog.go):
	// a listing takes titles and repair summaries from them.
	for _, u := range []projection.Unit{projection.Title(), projection.Repaired()} {
		if _, err := reg.Register(u); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := projcache.Open(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	return &SettledWriter{t: t, sdir: sdir, reg: reg, cache: cache, old: time.Now().Add(-time.Hour)}
}

// Write writes the log of h with events and its cache row.
func (w *SettledWriter) Write(h session.Header, events []session.Event) {
	t := w.t
	line, _ := session.MarshalHeaderLine(h)
	var buf bytes.Buffer
	buf.Write(line)
	buf.WriteByte('\n')
	for _, ev := range events {
		buf.Write(session.MustData(ev))
		buf.WriteByte('\n')
	}
	path := filepath.Join(w.sdir, h.ID+".jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, w.old, w.old)
	snap, err := w.reg.Restore(events)
	if err != nil {
		t.Fatal(err)
	}
	row := projcache.Row{ID: h.ID, CreatedAt: h.CreatedAt, Size: int64(buf.Len()), AsOfSeq: snap.AsOfSeq, Units: map[string]projcache.UnitValue{}}
	for k, v := range snap.Values {
		row.Units[k] = projcache.UnitValue{StateVersion: w.reg.Versions()[k], Value: v}
	}
	if err := w.cache.Put(row); err != nil {
		t.Fatal(err)
	}
}

// WriteLog writes a log of h's header line alone into the sessions
// directory dir.
func WriteLog(t testing.TB, dir string, h session.Header) {
	t.Helper()
	line, err := session.MarshalHeaderLine(h)
	if err != nil {
		t.Fatal(err)
	}
	WriteRaw(t, dir, h.ID+".jsonl", append(line, '\n'))
}

// WriteRaw writes data as dir/name.
func WriteRaw(t testing.TB, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}
