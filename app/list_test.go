package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/acp-agent/acp-agent/app/storetest"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
	"github.com/acp-agent/acp-agent/subagent"
)

// listAll answers every request of a fixed set (default, cwd filters,
// children) walking all pages, as one JSON document.
func listAll(t *testing.T, srv *acp.Server) string {
	t.Helper()
	children := map[string]any{acp.MetaIncludeChildren: true}
	requests := []acpsdk.ListSessionsRequest{
		{},
		{Cwd: acpsdk.Ptr("/work/project")},
		{Cwd: acpsdk.Ptr("/elsewhere")},
		{Meta: children},
		{Meta: children, Cwd: acpsdk.Ptr("/work/project")},
	}
	var pages []acpsdk.ListSessionsResponse
	for _, req := range requests {
		for {
			r, err := srv.ListSessions(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, r)
			if r.NextCursor == nil {
				break
			}
			req.Cursor = r.NextCursor
		}
	}
	b, err := json.MarshalIndent(pages, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// session/list answers the same through a valid, a deleted, a garbage and
// a truncated catalog index, and the same as a server reading every header
// the old way: same sessions, order, filters, titles, updatedAt, cursors,
// children only on request, unreadable files left out.
func TestSessionListIgnoresIndexState(t *testing.T) {
	dir := t.TempDir()
	storetest.WriteTitledSessions(t, dir, 70) // more than one page
	sdir := filepath.Join(dir, "sessions")
	storetest.WriteLog(t, sdir, session.Header{ID: "child", CreatedAt: 5, Cwd: "/work/project", ParentSession: "session-00003", Origin: session.OriginSubagent, DelegationDepth: 1})
	storetest.WriteLog(t, sdir, session.Header{ID: "other", CreatedAt: 6, Cwd: "/elsewhere"})
	storetest.WriteRaw(t, sdir, "empty.jsonl", nil)
	storetest.WriteRaw(t, sdir, "junk.jsonl", []byte("not a header\n"))
	// Distinct and equal update times, all older than the racy window.
	names, err := os.ReadDir(sdir)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour)
	for i, n := range names {
		at := base.Add(time.Duration(i%9) * time.Second)
		if err := os.Chtimes(filepath.Join(sdir, n.Name()), at, at); err != nil {
			t.Fatal(err)
		}
	}
	a := newTestApp(t, dir, "model:\n  main:\n    - text: unused\n")
	t.Cleanup(func() { a.Close() })
	legacy, err := acp.New(acp.Options{
		Sessions: a.Sessions,
		Stored:   storedSessions{p: a.Persist}, // no index: every header read
		NewAgent: func(*session.Session) (*agent.Agent, error) { return nil, errors.New("unused") },
		CachedTitle: func(r acp.StoredSession) (string, bool) {
			return a.cachedTitle(r.Header, r.Size)
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := listAll(t, legacy)
	for _, s := range []string{`"Task number 69"`, `"child"`, `"other"`, `"nextCursor"`} {
		if !strings.Contains(want, s) {
			t.Fatalf("listing lacks %s:\n%s", s, want)
		}
	}
	for _, s := range []string{"empty", "junk"} {
		if strings.Contains(want, `"`+s+`"`) {
			t.Fatalf("unreadable %s listed:\n%s", s, want)
		}
	}
	if strings.Count(want, `"sessionId": "child"`) != 2 {
		t.Fatalf("child not listed exactly in the two requests asking for children:\n%s", want)
	}

	indexFile := filepath.Join(dir, "projections", projcache.IndexFile)
	for _, state := range []struct {
		name   string
		damage func(t *testing.T)
	}{
		{"built", func(*testing.T) {}},
		{"valid", func(t *testing.T) {
			if _, err := os.Stat(indexFile); err != nil {
				t.Fatalf("no index built: %v", err)
			}
		}},
		{"deleted", func(t *testing.T) { os.Remove(indexFile) }},
		{"garbage", func(t *testing.T) {
			storetest.WriteRaw(t, filepath.Dir(indexFile), projcache.IndexFile, []byte("garbage"))
		}},
		{"truncated", func(t *testing.T) {
			data, err := os.ReadFile(indexFile)
			if err != nil || len(data) < 100 {
				t.Fatalf("index: %d bytes, %v", len(data), err)
			}
			storetest.WriteRaw(t, filepath.Dir(indexFile), projcache.IndexFile, data[:len(data)/2+3])
		}},
	} {
		state.damage(t)
		if got := listAll(t, a.Server); got != want {
			t.Fatalf("%s index: listing differs:\n%s\nwant\n%s", state.name, got, want)
		}
	}
}

// countingSessions counts the log reads of a session store.
type countingSessions struct {
	storedSessions
	inspects, loads atomic.Int64
}

func (c *countingSessions) Inspect(ctx context.Context, id string) (session.Header, []session.Event, error) {
	c.inspects.Add(1)
	return c.storedSessions.Inspect(ctx, id)
}

func (c *countingSessions) Load(ctx context.Context, id string) (session.Header, []session.Event, error) {
	c.loads.Add(1)
	return c.storedSessions.Load(ctx, id)
}

// With a valid catalog index, listing every page of N stored sessions opens
// no log: no header read, no Inspect, no cache row read; every title comes
// from the index.
func TestSessionListWithValidIndexOpensNoLog(t *testing.T) {
	const n = 120
	dir := t.TempDir()
	storetest.WriteTitledSessions(t, dir, n)
	p, err := persistence.Open(dir, persistence.Options{Logger: slog.New(slog.DiscardHandler), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
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
	var headerReads, cachedTitles atomic.Int64
	read := HeaderReader(p)
	index := cache.Index(p.Dir(), func(ctx context.Context, id string) (session.Header, error) {
		headerReads.Add(1)
		return read(ctx, id)
	})
	stored := &countingSessions{storedSessions: storedSessions{p: p, index: index}}
	srv, err := acp.New(acp.Options{
		Sessions: session.NewStore(&session.DeterministicSources{}),
		Stored:   stored,
		NewAgent: func(*session.Session) (*agent.Agent, error) { return nil, errors.New("unused") },
		CachedTitle: func(acp.StoredSession) (string, bool) {
			cachedTitles.Add(1)
			return "", false
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	listPages := func() []acpsdk.SessionInfo {
		var all []acpsdk.SessionInfo
		req := acpsdk.ListSessionsRequest{}
		for {
			r, err := srv.ListSessions(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r.Sessions...)
			if r.NextCursor == nil {
				return all
			}
			req.Cursor = r.NextCursor
		}
	}
	// No index yet: the first listing reads each header once and builds it.
	if got := listPages(); len(got) != n {
		t.Fatalf("%d sessions listed, want %d", len(got), n)
	}
	// The first page rebuilt every row and wrote the index; the later
	// pages read none.
	if h := headerReads.Load(); h != n {
		t.Fatalf("building the index over all pages: %d header reads, want %d", h, n)
	}
	headerReads.Store(0)
	stored.inspects.Store(0)
	cachedTitles.Store(0)

	got := listPages()
	if len(got) != n {
		t.Fatalf("%d sessions listed, want %d", len(got), n)
	}
	for i, s := range got {
		if s.Title == nil || !strings.HasPrefix(*s.Title, "Task number ") {
			t.Fatalf("session %d (%s): title %v", i, s.SessionId, s.Title)
		}
	}
	// Equal update times: ordered by id.
	for i, s := range got {
		if want := fmt.Sprintf("Task number %d", i); *s.Title != want {
			t.Fatalf("session %d (%s) titled %q, want %q", i, s.SessionId, *s.Title, want)
		}
	}
	if h, i, l, c := headerReads.Load(), stored.inspects.Load(), stored.loads.Load(), cachedTitles.Load(); h+i+l+c != 0 {
		t.Fatalf("valid index: %d header reads, %d inspections, %d loads, %d cache row reads; want none", h, i, l, c)
	}
}
