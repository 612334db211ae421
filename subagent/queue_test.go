package subagent_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// startOrder is the order of the start edges of ids' activations.
func startOrder(lc *lifecycle, names map[string]string) []string {
	var out []string
	for _, ev := range lc.all() {
		if ev.Type == subagent.EventStart {
			out = append(out, names[ev.ID])
		}
	}
	return out
}

// startQueued starts a continuable child in the background and returns
// once it waits for a slot; its id (or error) arrives on the channel.
func startQueued(t *testing.T, ctx context.Context, st *subagenttest.Stack, parentLabel string, label string) <-chan string {
	t.Helper()
	parent := st.Live(parentLabel)
	queued := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
			Provider: "spawn", Label: label, Prompt: text("task: " + label), Parent: parent,
			OnQueued: func(int, int) { close(queued) },
		})
		if err != nil {
			t.Errorf("start %s: %v", label, err)
		}
		done <- id
	}()
	select {
	case <-queued:
	case id := <-done:
		t.Fatalf("start %s did not wait for a slot (started %s)", label, id)
	case <-ctx.Done():
		t.Fatalf("start %s never queued", label)
	}
	return done
}

// TestQueueIsFIFOAndCountsColdResumes: with one background slot held by
// a running child, a message to a settled (cold) child waits for a slot
// like a new start, in the same queue: the queued resume and the queued
// starts are served first-in first-out, each only once the slot it takes
// was freed after the settlement notice of the child before it reached
// the parent.
func TestQueueIsFIFOAndCountsColdResumes(t *testing.T) {
	ctx := testCtx(t)
	held := newGate()
	var (
		st      *subagenttest.Stack
		mu      sync.Mutex
		noticed = map[string][]string{} // label -> notices in the parent's log when it ran
	)
	// Each queued activation's first model call records which settlement
	// notices its parent had then.
	seen := func(label, reply string) func(context.Context) ([]session.Chunk, error) {
		return func(context.Context) ([]session.Chunk, error) {
			evs, _ := st.Live("parent").Session().Events()
			mu.Lock()
			noticed[label] = userTexts(evs, session.SourceSubagentSettled)
			mu.Unlock()
			return subagenttest.Text(reply), nil
		}
	}
	sc := newScript().text("cold", "cold done").add("cold", seen("cold", "cold again")).
		add("held", held.reply("held done")).
		add("second", seen("second", "second done")).
		add("third", seen("third", "third done")).
		text("main", "NOTED", "NOTED", "NOTED", "NOTED", "NOTED", "NOTED")
	st, _ = worktreeStack(t, t.TempDir(), sc, nil, 1)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")

	cold, _ := startChild(t, ctx, st.Runtime, parent, "cold")
	lc.waitEnds(t, ctx, cold, 1)
	waitIdle(t, ctx, parent)
	if st.Runtime.Resident(cold) {
		t.Fatal("the first child did not settle")
	}
	heldID, _ := startChild(t, ctx, st.Runtime, parent, "held")
	held.waitEntered(t, ctx)

	// The cold resume waits: the one slot is taken.
	resumed := make(chan error, 1)
	go func() {
		_, err := st.Runtime.Followup(ctx, parent, cold, text("more"))
		resumed <- err
	}()
	for len(st.Runtime.Queued("parent")) == 0 {
		select {
		case err := <-resumed:
			t.Fatalf("the cold resume did not wait for a slot (err %v)", err)
		case <-ctx.Done():
			t.Fatal("the cold resume never queued")
		default:
		}
	}
	second := startQueued(t, ctx, st, "parent", "second")
	third := startQueued(t, ctx, st, "parent", "third")
	q := st.Runtime.Queued("parent")
	if len(q) != 3 || q[0].ID != cold || !q[0].Resume || q[0].Label != "cold" || q[1].Label != "second" || q[2].Label != "third" ||
		q[1].Resume || q[2].Position != 3 {
		t.Fatalf("queue = %+v, want the cold resume, second, third", q)
	}
	if n := st.Runtime.RunningBackground("parent"); n != 1 {
		t.Fatalf("running = %d, want 1", n)
	}

	held.open()
	if err := <-resumed; err != nil {
		t.Fatalf("cold resume: %v", err)
	}
	secondID, thirdID := <-second, <-third
	lc.waitEnds(t, ctx, thirdID, 1)
	names := map[string]string{cold: "cold", heldID: "held", secondID: "second", thirdID: "third"}
	if got, want := startOrder(lc, names), []string{"cold", "held", "cold", "second", "third"}; !slices.Equal(got, want) {
		t.Fatalf("start order %v, want %v", got, want)
	}
	// Each ran only after the notice of the child whose slot it took.
	mu.Lock()
	defer mu.Unlock()
	for label, before := range map[string]string{"cold": heldID, "second": cold, "third": secondID} {
		found := false
		for _, n := range noticed[label] {
			if strings.Contains(n, before) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s ran before the parent had the notice of %s (notices then: %q)", label, names[before], noticed[label])
		}
	}
}

// TestCutQueuedStartIsListedAfterRestart: a start waiting for a slot is
// recorded in its parent's log; while it waits it is listed as queued
// only, a cancelled one is closed in the log and not listed, and one the
// process stopped while it waited is listed after the restart as not
// started, with the reason.
func TestCutQueuedStartIsListedAfterRestart(t *testing.T) {
	ctx := testCtx(t)
	held := newGate()
	sc := newScript().add("held", held.reply("held done")).text("main", "NOTED", "NOTED")
	ps := mustPersistence(t)
	reg := projection.New()
	if _, err := subagent.RegisterProjections(reg); err != nil {
		t.Fatal(err)
	}
	st := subagenttest.New(t, subagenttest.Config{Model: sc.model(), Durable: durable{ps}, SyncTo: ps.SyncTo, MaxBackground: 1,
		Attach: func(s *session.Store) { ps.Attach(s); reg.Attach(s) }})
	parent := st.NewParent(t, "parent")
	startChild(t, ctx, st.Runtime, parent, "held")
	held.waitEntered(t, ctx)

	// A cancelled queued start.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, _, err := st.Runtime.StartContinuable(cctx, subagent.ContinuableSpec{
			Provider: "spawn", Label: "cancelled", Prompt: text("task"), Parent: parent,
			OnQueued: func(int, int) { cancel() },
		})
		errc <- err
	}()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled start started")
	}
	cut := startQueued(t, ctx, st, "parent", "cut")
	q := st.Runtime.Queued("parent")
	if len(q) != 1 {
		t.Fatalf("queue = %+v", q)
	}
	cutID := q[0].ID

	live := &subagent.Catalog{Sessions: st.Sessions, Projections: reg, Persisted: durable{ps}, Waiting: st.Runtime.Waiting}
	rows, err := live.ListChildren(ctx, "parent")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Kind == subagent.KindDiagnostic {
			t.Fatalf("a waiting or cancelled start is listed: %+v", r)
		}
	}

	// The restart: the parent's log as the stopped process left it, read
	// by a new process that has no queue.
	if err := ps.SyncTo(ctx, "parent", int64(parent.Session().Len()-1)); err != nil {
		t.Fatal(err)
	}
	restarted := &subagent.Catalog{Sessions: session.NewStore(nil), Projections: reg, Persisted: durable{ps}}
	for _, list := range []func() ([]subagent.ListEntry, error){
		func() ([]subagent.ListEntry, error) { return restarted.ListChildren(ctx, "parent") },
		func() ([]subagent.ListEntry, error) {
			d, err := restarted.ListDescendants(ctx, "parent")
			out := make([]subagent.ListEntry, len(d))
			for i := range d {
				out[i] = d[i].ListEntry
			}
			return out, err
		},
	} {
		rows, err := list()
		if err != nil {
			t.Fatal(err)
		}
		var notStarted []subagent.ListEntry
		for _, r := range rows {
			if r.Kind == subagent.KindDiagnostic {
				notStarted = append(notStarted, r)
			}
		}
		if len(notStarted) != 1 || notStarted[0].ID != cutID || notStarted[0].Reason != subagent.ReasonNotStarted ||
			!strings.Contains(notStarted[0].Detail, `"cut"`) || !strings.Contains(notStarted[0].Detail, "waiting for a background slot") {
			t.Fatalf("rows after the restart: %+v, want the cut start %s as not started", rows, cutID)
		}
	}
	held.open()
	<-cut
}
