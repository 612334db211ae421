package subagent_test

// Continuation contract tests for children busy with maintenance
// (subagent-contract.md §5.7 C72, C76; map in CONTRACT_TESTS.md). Go's
// maintenance is a compaction run on demand (agent.Agent.Compact): it runs
// as a turn of its own that claims no message, so work accepted meanwhile
// waits in the inbox until it ends. Its summary request is held by a gate.

import (
	"context"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// compactAfterTurn queues a compaction of a while its first turn is
// still running (so it runs right after that turn, before the agent could
// settle) and returns the compaction's result.
func compactAfterTurn(ctx context.Context, a *agent.Agent) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := a.Compact(ctx, "")
		done <- err
	}()
	return done
}

// C72: a follow-up accepted while the child is busy with maintenance (no
// turn was opened for it) and then cancelled by a selected-child drain
// ends the epoch "stopped"; the notice quotes the answer of the turn
// before. The child owns a running grandchild, so it waits (resident)
// between its first turn and the compaction instead of settling.
func TestAcceptedFollowupCancelledDuringMaintenanceIsNoticedAsStopped(t *testing.T) {
	ctx := testCtx(t)
	g, gg, gm := newGate(), newGate(), newGate()
	defer gg.open()
	defer gm.open()
	m := newScript().add("c72", g.reply("the answer")).add("c72"+agent.CompactScriptSuffix, gm.reply("summary")).
		add("grand", gg.reply("never")).text("main", "noted").model()
	st, ps, _, _ := faultStack(t, m, nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "c72", "c72")); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, ctx)
	child := st.Live("c72")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(child, "g72", "grand")); err != nil {
		t.Fatal(err)
	}
	gg.waitEntered(t, ctx)
	compacted := compactAfterTurn(ctx, child)
	g.open()
	gm.waitEntered(t, ctx) // the child is compacting
	msgID, err := st.Runtime.Followup(ctx, parent, "c72", text("second task"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Runtime.DrainChildren(ctx, parent, "c72"); err != nil {
		t.Fatal(err)
	}
	if err := <-compacted; err == nil {
		t.Error("the drained compaction completed")
	}
	ends := lc.waitEnds(t, ctx, "c72", 1)
	if ends[0].StopReason != "aborted" || session.JoinText(ends[0].LastAssistantMessage, "") != "the answer" {
		t.Errorf("end = %+v, want aborted with the first answer", ends[0])
	}
	waitIdle(t, ctx, parent)
	want := "Background subagent c72 was stopped before it finished.\nIts closing message:\nthe answer"
	if got := userTexts(parent.Session().MustEvents(), "subagent-settled"); len(got) != 1 || got[0] != want {
		t.Errorf("notices = %q, want %q", got, want)
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "c72")
	if got := userTexts(evs, "coordinator"); len(got) != 0 {
		t.Errorf("coordinator texts = %q: the cancelled follow-up was logged", got)
	}
	// No turn claimed it: the splice after its insert cancels it unrun.
	after := ""
	for i, ev := range evs {
		if ev.Type != session.TypeInboxSpliced {
			continue
		}
		d, _ := session.DecodeData[session.InboxSplicedData](ev)
		if len(d.Inserted) != 1 || d.Inserted[0].ID != msgID {
			continue
		}
		for _, next := range evs[i+1:] {
			if next.Type != session.TypeInboxSpliced {
				continue
			}
			nd, _ := session.DecodeData[session.InboxSplicedData](next)
			if nd.Target == session.InboxNextTurn && nd.RemovedCount != nil {
				after = "removed:" + nd.Outcome
				break
			}
		}
	}
	if after != "removed:canceled" {
		t.Errorf("the follow-up's next-turn splice = %q, want its cancellation", after)
	}
	if n := len(m.Requests("c72")); n != 1 {
		t.Errorf("child model requests = %d, want 1 (the follow-up never reached the model)", n)
	}
}

// C76: a middle parent busy with maintenance when its two children settle
// keeps both notices, in settlement order, for the next step after the
// maintenance, and stays resident meanwhile; they reach the model in one
// turn.
func TestMaintainingMiddleParentKeepsBothNoticesInOrder(t *testing.T) {
	ctx := testCtx(t)
	gmid, gm, gf, gs := newGate(), newGate(), newGate(), newGate()
	defer gmid.open()
	defer gm.open()
	defer gf.open()
	defer gs.open()
	m := newScript().add("mid", gmid.reply("mid answer, long enough that a one-word summary makes the context smaller: "+strings.Repeat("detail ", 40))).text("mid", "mid saw both").add("mid"+agent.CompactScriptSuffix, gm.reply("summary")).
		add("first", gf.reply("first answer")).add("second", gs.reply("second answer")).text("main", "noted").model()
	st, ps, _, _ := faultStack(t, m, nil)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")
	if _, _, err := st.Runtime.StartContinuable(ctx, spec(parent, "m76", "mid")); err != nil {
		t.Fatal(err)
	}
	gmid.waitEntered(t, ctx)
	mid := st.Live("m76")
	for _, c := range []struct {
		id, label string
		g         *gate
	}{{"f76", "first", gf}, {"s76", "second", gs}} {
		if _, _, err := st.Runtime.StartContinuable(ctx, spec(mid, c.id, c.label)); err != nil {
			t.Fatal(err)
		}
		c.g.waitEntered(t, ctx)
	}
	compacted := compactAfterTurn(ctx, mid)
	gmid.open()
	gm.waitEntered(t, ctx) // the middle parent is compacting
	gf.open()
	lc.waitEnds(t, ctx, "f76", 1)
	gs.open()
	lc.waitEnds(t, ctx, "s76", 1)
	if !st.Runtime.Resident("m76") || st.Live("m76") != mid {
		t.Fatal("the maintaining middle parent did not stay resident")
	}
	var kept []string
	for _, ev := range mid.Session().MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			for _, msg := range d.Inserted {
				if msg.Source.Kind == "subagent-settled" {
					kept = append(kept, d.Target+":"+msg.Source.SenderSessionID)
				}
			}
		}
	}
	if want := session.InboxNextStep + ":f76," + session.InboxNextStep + ":s76"; strings.Join(kept, ",") != want {
		t.Errorf("notices kept = %v, want %s", kept, want)
	}
	gm.open()
	if err := <-compacted; err != nil {
		t.Fatalf("compaction: %v", err)
	}
	ends := lc.waitEnds(t, ctx, "m76", 1)
	if ends[0].StopReason != "completed" || session.JoinText(ends[0].LastAssistantMessage, "") != "mid saw both" {
		t.Errorf("middle parent end = %+v", ends[0])
	}
	_, evs := persistedEvents(t, ctx, durable{ps}, "m76")
	var senders []string
	for _, msg := range userMessages(evs) {
		if msg.Source.Kind == "subagent-settled" {
			senders = append(senders, msg.Source.SenderSessionID)
		}
	}
	if strings.Join(senders, ",") != "f76,s76" {
		t.Errorf("notices delivered = %v, want f76 then s76", senders)
	}
	// Turn 1, the compaction turn, then one turn for both notices.
	if n := count(evs, session.TypeTurnStart); n != 3 {
		t.Errorf("middle parent turns = %d, want 3", n)
	}
	if n := len(m.Requests("mid")); n != 2 {
		t.Errorf("middle parent model requests = %d, want 2", n)
	}
}
