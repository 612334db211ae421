package subagent_test

import (
	"sync/atomic"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// countingFile is the persistence store as the live store's persister,
// counting the reads of evicted events.
type countingFile struct {
	*persistence.Store
	reads atomic.Int64
}

func (c *countingFile) ReadEvents(id string, from, to int64) ([]session.Event, error) {
	c.reads.Add(1)
	return c.Store.ReadEvents(id, from, to)
}

// evictingStack is durableStack whose sessions keep nothing in memory that
// their file holds (resident limit 0), so every read of an older event goes
// to the file.
func evictingStack(t *testing.T, m *subagenttest.FuncModel) (*subagenttest.Stack, *countingFile) {
	t.Helper()
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	file := &countingFile{Store: ps}
	st := subagenttest.New(t, subagenttest.Config{
		Model: m,
		Attach: func(s *session.Store) {
			s.SetPersister(file)
			s.SetResidentBytes(0)
		},
		Durable: durable{ps},
		SyncTo:  ps.SyncTo,
	})
	return st, file
}

// TestChildrenRunFromEvictedLogs: with every written event evicted, a
// continuable child still settles with its closing message (read back
// from its file), is resumed cold with its whole history in the model's
// view, and its log in memory and on disk agree.
func TestChildrenRunFromEvictedLogs(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().
		call("child", "c1", "list_agents", map[string]any{}).text("child", "the answer", "the second answer").
		text("main", "NOTED", "NOTED AGAIN")
	m := sc.model()
	st, file := evictingStack(t, m)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	id, _ := startChild(t, ctx, st.Runtime, parent, "child")
	lc.waitEnds(t, ctx, id, 1)
	waitIdle(t, ctx, parent)
	if parent.Session().Resident() == 0 {
		t.Fatal("the parent's log was never evicted: the test exercises nothing")
	}
	msgs := userMessages(parent.Session().MustEvents())
	if len(msgs) != 1 || session.JoinText(msgs[0].Content, "\n") != "Background subagent "+id+" finished and will do no further work unless you send it more.\nIts closing message:\nthe answer" {
		t.Fatalf("parent notices = %+v", msgs)
	}

	if _, err := st.Runtime.Followup(ctx, parent, id, text("and again")); err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, id, 2)
	waitIdle(t, ctx, parent)
	reqs := m.Requests("child")
	last := reqs[len(reqs)-1]
	// task, the call, its result, the first answer, the follow-up.
	if len(last.Messages) != 5 || session.JoinText(last.Messages[4].Content, "") != "and again" {
		t.Fatalf("resumed child's request has %d messages: %+v", len(last.Messages), last.Messages)
	}
	msgs = userMessages(parent.Session().MustEvents())
	if len(msgs) != 2 || session.JoinText(msgs[1].Content[2:], "") != "the second answer" {
		t.Fatalf("second notice = %+v", msgs)
	}
	if file.reads.Load() == 0 {
		t.Fatal("no event was read back")
	}
	_, stored, err := durable{file.Store}.Inspect(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	if live := parent.Session().MustEvents(); len(live) != len(stored) {
		t.Fatalf("parent log: %d events live, %d on disk", len(live), len(stored))
	}
}

// TestLiveParentListedWithoutReadingItsLog: the catalog accounts for the
// children a live parent's log names from an incremental index, so once
// warm a listing reads none of the parent's evicted events.
func TestLiveParentListedWithoutReadingItsLog(t *testing.T) {
	ctx := testCtx(t)
	sc := newScript().text("a", "done").text("b", "done").text("c", "done").text("main", "ok", "ok", "ok")
	st, file := evictingStack(t, sc.model())
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Attach(st.Sessions))
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	var ids []string
	for _, label := range []string{"a", "b", "c"} {
		id, _ := startChild(t, ctx, st.Runtime, parent, label)
		ids = append(ids, id)
	}
	for _, id := range ids {
		lc.waitEnds(t, ctx, id, 1)
	}
	waitIdle(t, ctx, parent)
	cat := &subagent.Catalog{Sessions: st.Sessions, Projections: reg, Persisted: durable{file.Store}}
	list := func() []subagent.ListEntry {
		t.Helper()
		rows, err := cat.ListChildren(ctx, "parent")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("%d rows: %+v", len(rows), rows)
		}
		for _, r := range rows {
			if r.Kind == subagent.KindDiagnostic {
				t.Fatalf("diagnostic row %+v", r)
			}
		}
		return rows
	}
	list()
	parent.Session().Evict()
	before := file.reads.Load()
	list()
	if n := file.reads.Load() - before; n != 0 {
		t.Fatalf("a warm listing read the parent's log back %d times", n)
	}
}
