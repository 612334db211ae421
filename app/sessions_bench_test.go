package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// writeTitledSessions writes n settled sessions of about 1 KiB, each with
// a title, and their projection cache rows (as the app's checkpoints
// write them), dated an hour back.
func writeTitledSessions(t testing.TB, dir string, n int) {
	w := newSettledWriter(t, dir)
	for i := range n {
		id := fmt.Sprintf("session-%05d", i)
		events := []session.Event{
			{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: session.MustData(session.TurnData{Turn: 1})},
			{Type: session.TypeUserMessage, Seq: 1, Time: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.Message{ID: "u", Role: session.RoleUser, Content: []session.Block{session.Text(strings.Repeat("please do the thing ", 30))}, Source: session.Source{Kind: session.SourceUser}})},
			{Type: session.TypeSessionTitle, Seq: 2, Time: 1, Data: session.MustData(session.TitleData{Title: fmt.Sprintf("Task number %d", i), Source: session.Source{Kind: "fallback"}})},
			{Type: session.TypeTurnEnd, Seq: 3, Time: 2, Data: session.MustData(session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})},
		}
		w.write(session.Header{ID: id, CreatedAt: int64(1_700_000_000_000 + i), Cwd: "/work/project"}, events)
	}
}

// settledWriter writes settled session logs into a data directory with
// their projection cache rows (as the app's checkpoints write them), each
// log dated an hour back (outside the index's racy window).
type settledWriter struct {
	t     testing.TB
	sdir  string
	reg   *projection.Registry
	cache *projcache.Cache
	old   time.Time
}

func newSettledWriter(t testing.TB, dir string) *settledWriter {
	sdir := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		t.Fatal(err)
	}
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(projection.Title()); err != nil {
		t.Fatal(err)
	}
	cache, err := projcache.Open(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	return &settledWriter{t: t, sdir: sdir, reg: reg, cache: cache, old: time.Now().Add(-time.Hour)}
}

// write writes the log of h with events and its cache row.
func (w *settledWriter) write(h session.Header, events []session.Event) {
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

// BenchmarkSessionsCommand runs `acp-agent sessions` over 10,000 stored
// sessions: "index" with a valid catalog index (titles from its rows),
// "noindex" with the index deleted before every run (every header and
// every log read; the run rebuilds the index).
//
//	go test ./app -run '^$' -bench SessionsCommand -benchtime 3x -count 3 -benchmem
func BenchmarkSessionsCommand(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	writeTitledSessions(b, dir, n)
	run := func(b *testing.B) {
		var errOut bytes.Buffer
		out := &countingWriter{}
		if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), out, &errOut, noEnv); code != ExitOK {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
		if out.lines != n+1 {
			b.Fatalf("%d lines", out.lines)
		}
	}
	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	for _, mode := range []string{"index", "noindex"} {
		b.Run(mode, func(b *testing.B) {
			run(b) // builds the index
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if mode == "noindex" {
					b.StopTimer()
					os.Remove(indexFile)
					b.StartTimer()
				}
				run(b)
			}
		})
	}
}

// countingWriter counts the lines written to it.
type countingWriter struct{ lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// The sessions table is the same with a valid, a deleted and a damaged
// index.
func TestSessionsCommandIgnoresIndexState(t *testing.T) {
	dir := t.TempDir()
	writeTitledSessions(t, dir, 30)
	run := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), &out, &errOut, noEnv); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		return out.String()
	}
	want := run()
	if !strings.Contains(want, "Task number 29") {
		t.Fatalf("table:\n%s", want)
	}
	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	if _, err := os.Stat(indexFile); err != nil {
		t.Fatalf("no index built: %v", err)
	}
	for _, damage := range []func(){
		func() {},
		func() { os.Remove(indexFile) },
		func() { os.WriteFile(indexFile, []byte("garbage"), 0o600) },
		func() { os.RemoveAll(filepath.Join(dir, "projections")) },
	} {
		damage()
		if got := run(); got != want {
			t.Fatalf("table differs:\n%s\nwant\n%s", got, want)
		}
	}
}

// BenchmarkSessionsScaling runs `acp-agent sessions` (valid index) over
// 1,000, 10,000 and 50,000 stored sessions and reports the cost per
// session (wall and CPU), which should stay flat:
//
//	go test ./app -run '^$' -bench SessionsScaling -benchtime 3x -benchmem
func BenchmarkSessionsScaling(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			writeTitledSessions(b, dir, n)
			run := func(b *testing.B) {
				var errOut bytes.Buffer
				out := &countingWriter{}
				if code := Main(context.Background(), []string{"--data-dir", dir, "sessions"}, strings.NewReader(""), out, &errOut, noEnv); code != ExitOK {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
				if out.lines != n+1 {
					b.Fatalf("%d lines", out.lines)
				}
			}
			run(b) // builds the index
			perItem(b, n, "session", run)
		})
	}
}
