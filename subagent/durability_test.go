package subagent_test

import (
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// reopenParent adopts a persisted top-level session into a new stack.
func reopenParent(t *testing.T, st *subagenttest.Stack, ps *persistence.Store, id string) *subagenttest.Stack {
	t.Helper()
	snap, err := ps.Load(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Sessions.Adopt(snap.Header, snap.Events)
	if err != nil {
		t.Fatal(err)
	}
	st.Register(t, s)
	return st
}

func TestRestartResumesASettledChildFromDiskAndNotifiesTheParent(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	sc := newScript().text("child", "first answer", "second answer").text("main", "noted first", "noted second")
	var childID string
	func() {
		st, ps := durableStack(t, dir, sc.model())
		lc := record(st.Runtime)
		parent := st.NewParent(t, "parent")
		childID, _ = startChild(t, ctx, st.Runtime, parent, "child")
		lc.waitEnds(t, ctx, childID, 1)
		waitIdle(t, ctx, parent)
		// Drop every runtime object: drain, close agents, close storage.
		st.Close()
		if err := st.Sessions.Remove("parent"); err != nil {
			t.Fatal(err)
		}
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}()

	st, ps := durableStack(t, dir, sc.model())
	lc := record(st.Runtime)
	reopenParent(t, st, ps, "parent")
	parent := st.Live("parent")
	if _, err := st.Runtime.Followup(ctx, parent, childID, text("and then?")); err != nil {
		t.Fatal(err)
	}
	ends := lc.waitEnds(t, ctx, childID, 1)
	if got := session.JoinText(ends[0].LastAssistantMessage, ""); got != "second answer" {
		t.Errorf("resumed epoch output = %q", got)
	}
	waitIdle(t, ctx, parent)
	_, evs := persistedEvents(t, ctx, durable{ps}, childID)
	msgs := userMessages(evs)
	last := msgs[len(msgs)-1]
	if session.JoinText(last.Content, "") != "and then?" || last.Source != (session.Source{Kind: "coordinator", Form: "relay", SenderSessionID: "parent"}) {
		t.Errorf("last child message = %+v", last)
	}
	notices := userTexts(parent.Session().MustEvents(), "subagent-settled")
	if len(notices) != 2 || !strings.HasSuffix(notices[1], "Its closing message:\nsecond answer") {
		t.Errorf("parent notices = %q", notices)
	}
}

func TestASecondRuntimeCannotActivateAChildTheFirstHolds(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	g := newGate()
	sc := newScript().text("child", "first answer").add("child", g.reply("second answer"))
	st1, ps1 := durableStack(t, dir, sc.model())
	lc := record(st1.Runtime)
	p1 := st1.NewParent(t, "parent")
	childID, _ := startChild(t, ctx, st1.Runtime, p1, "child")
	lc.waitEnds(t, ctx, childID, 1)
	// Runtime 1 resumes the child and keeps it busy (it holds the lock).
	if _, err := st1.Runtime.Followup(ctx, p1, childID, text("hold on")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	if err := ps1.Flush(ctx, "parent"); err != nil {
		t.Fatal(err)
	}

	// Runtime 2: its own persistence store (its own locks) on the same dir,
	// and its own live copy of the parent session, read without locking.
	st2, ps2 := durableStack(t, dir, sc.model())
	snap, err := ps2.Inspect(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	s2 := session.NewStore(nil) // detached copy: never written, never locks
	ps, err := s2.Adopt(snap.Header, snap.Events)
	if err != nil {
		t.Fatal(err)
	}
	_ = st2.Sessions
	p2 := st2.Register(t, ps)
	_, err = st2.Runtime.Followup(ctx, p2, childID, text("me too"))
	if !subagent.HasCode(err, subagent.CodeSessionLocked) {
		t.Fatalf("err = %v, want SESSION_LOCKED", err)
	}
	if st2.Runtime.Resident(childID) || st2.Live(childID) != nil {
		t.Error("the second runtime activated the child")
	}
	g.open()
	lc.waitEnds(t, ctx, childID, 2)
	_, evs := persistedEvents(t, ctx, durable{ps1}, childID)
	if got := userTexts(evs, ""); strings.Contains(strings.Join(got, "|"), "me too") {
		t.Errorf("the refused message reached the log: %q", got)
	}
}

func TestFiftyConcurrentContinuableChildrenAllSettleWithoutLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := testCtx(t)
	const n = 50
	sc := newScript()
	for i := range n {
		sc.text(label(i), "answer "+label(i))
	}
	sc.text("main", "noted")
	for range n {
		sc.text("main", "noted")
	}
	st, _ := durableStack(t, t.TempDir(), sc.model())
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: label(i), Prompt: text("go"), Parent: parent})
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	ends := lc.waitEnds(t, ctx, "", n)
	for _, e := range ends {
		if e.StopReason != "completed" {
			t.Errorf("%s stop = %s", e.ID, e.StopReason)
		}
	}
	// Every notice reaches the parent, whether it was idle or busy then.
	for {
		waitIdle(t, ctx, parent)
		if parent.Status() == "idle" {
			break
		}
	}
	notices := userTexts(parent.Session().MustEvents(), "subagent-settled")
	if len(notices) != n {
		t.Errorf("parent got %d notices, want %d", len(notices), n)
	}
	if st.Runtime.ResidentCount() != 0 {
		t.Errorf("%d activations still resident", st.Runtime.ResidentCount())
	}
	for _, id := range ids {
		if st.Live(id) != nil {
			t.Errorf("child %s still registered", id)
		}
	}
	st.Close()
}

func label(i int) string { return "c" + string(rune('A'+i/26)) + string(rune('a'+i%26)) }
