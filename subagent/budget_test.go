package subagent_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/budgets"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

func scriptOf(t *testing.T, doc string) *scripted.Script {
	t.Helper()
	s, err := scripted.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The tree's usage is the sum of what every session of it reported, and
// its cost is that of the price table (here an override for every model).
func TestTreeUsageIsTheSumOfItsSessions(t *testing.T) {
	script := scriptOf(t, `model:
  main:
    - tool_calls:
        - {id: c1, name: subagent, arguments: '{"description": "A", "prompt": "a", "run_in_background": false}'}
      usage: {input: 100, output: 10}
    - tool_calls:
        - {id: c2, name: subagent, arguments: '{"description": "B", "prompt": "b", "run_in_background": false}'}
      usage: {input: 200, output: 20, cached: 50}
    - text: done
      usage: {input: 300, output: 30}
  A:
    - text: a done
      usage: {input: 1000, output: 100, reasoning: 40}
  B:
    - tool_calls:
        - {id: b1, name: list_agents, arguments: '{}'}
      usage: {input: 2000, output: 200}
    - text: b done
      usage: {input: 3000, output: 300}
`)
	prices, err := budget.NewPrices(map[string]budget.Price{"*": {Input: 2, CachedInput: 1, Output: 10}})
	if err != nil {
		t.Fatal(err)
	}
	st := subagenttest.New(t, subagenttest.Config{Model: scripted.New(script), Budgets: subagent.BudgetOptions{Prices: prices}})
	parent := st.NewParent(t, "root")
	if _, err := parent.Prompt(context.Background(), session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("go")}}); err != nil {
		t.Fatal(err)
	}
	got := st.Runtime.TreeUsage("root")
	in, out := 100+200+300+1000+2000+3000, 10+20+30+100+200+300
	wantCost := (float64(in-50)*2 + 50*1 + float64(out)*10) / 1e6
	if got.Input != in || got.Output != out || got.Cached != 50 || got.Reasoning != 40 || got.Responses != 6 {
		t.Fatalf("tree usage %+v, want %d in, %d out, 50 cached, 40 reasoning, 6 responses", got, in, out)
	}
	if !got.CostKnown() || math.Abs(got.Cost-wantCost) > 1e-12 {
		t.Fatalf("tree cost %v (known %v), want %v", got.Cost, got.CostKnown(), wantCost)
	}
}

// A quiet running child is reported stalled once, to its parent's model,
// and shown stalled; the watchdog runs on a fake clock.
func TestStallWatchdogNotifiesTheParent(t *testing.T) {
	script := scriptOf(t, `model:
  main:
    - tool_calls:
        - {id: c1, name: subagent, arguments: '{"description": "Quiet", "prompt": "wait"}'}
    - text: started
    - text: noted the stall
  Quiet:
    - text: thinking
      hang: true
`)
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	st := subagenttest.New(t, subagenttest.Config{Model: scripted.New(script),
		Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		Budgets: subagent.BudgetOptions{StallAfter: 5 * time.Minute, Now: clock}})
	parent := st.NewParent(t, "root")
	ctx := context.Background()
	if _, err := parent.Prompt(ctx, session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("go")}}); err != nil {
		t.Fatal(err)
	}
	var childID string
	for deadline := time.Now().Add(10 * time.Second); childID == "" && time.Now().Before(deadline); {
		for _, a := range st.Agents.List() {
			if a.ID() != "root" && a.Status() == "running" {
				childID = a.ID()
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if childID == "" {
		for _, a := range st.Agents.List() {
			evs, _ := a.Session().Events()
			for _, ev := range evs {
				t.Logf("%s %s %s", a.ID(), ev.Type, ev.Data)
			}
		}
		t.Fatal("the child never ran")
	}
	if got := st.Runtime.SweepStalls(); len(got) != 0 {
		t.Fatalf("stalled before any time passed: %v", got)
	}
	mu.Lock()
	now = now.Add(5 * time.Minute)
	mu.Unlock()
	got := st.Runtime.SweepStalls()
	if len(got) != 1 || got[0] != childID {
		t.Fatalf("sweep %v, want [%s]", got, childID)
	}
	if !st.Runtime.Stalled(childID) {
		t.Fatal("the child is not shown stalled")
	}
	if again := st.Runtime.SweepStalls(); len(again) != 0 {
		t.Fatalf("the stall was reported twice: %v", again)
	}
	if err := parent.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	events, _ := parent.Session().Events()
	found := false
	for _, ev := range events {
		if ev.Type == session.TypeUserMessage && strings.Contains(string(ev.Data), "no model output and no tool progress for 5m0s") {
			found = true
		}
	}
	if !found {
		t.Fatal("the parent's log has no stall notice")
	}
}

// The tree limit counts what the tree spent before a restart: after the
// root is loaded in a new process, its first response past the limit
// (counted with its child's spending read from the stored logs) ends its
// turn with stop reason budget; the same response without the stored
// child's spending would stay under it.
func TestTreeLimitHoldsAfterARestart(t *testing.T) {
	script := scriptOf(t, `model:
  main:
    - tool_calls:
        - {id: c1, name: subagent, arguments: '{"description": "A", "prompt": "a", "run_in_background": false}'}
      usage: {input: 100, output: 10}
    - text: done
      usage: {input: 100, output: 10}
    - tool_calls:
        - {id: c2, name: list_agents, arguments: '{}'}
      usage: {input: 2000, output: 10}
    - text: not reached
      usage: {input: 1, output: 1}
  A:
    - text: a done
      usage: {input: 3000, output: 100}
`)
	dir := t.TempDir()
	tree := subagent.BudgetOptions{Tree: budgets.Limits{MaxTokens: 5000}}
	stack := func() (*subagenttest.Stack, *persistence.Store) {
		ps, err := persistence.Open(dir, persistence.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close() })
		st := subagenttest.New(t, subagenttest.Config{Model: scripted.New(script), Budgets: tree,
			Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo})
		return st, ps
	}
	ctx := testCtx(t)
	prompt := session.Message{Role: session.RoleUser, Content: []session.Block{session.Text("go")}}
	func() {
		st, ps := stack()
		parent := st.NewParent(t, "root")
		if _, err := parent.Prompt(ctx, prompt); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, ctx, parent)
		if got := st.Runtime.TreeUsage("root").Tokens(); got != 3320 {
			t.Fatalf("tree before the restart: %d tokens, want 3320", got)
		}
		st.Close()
		if err := st.Sessions.Remove("root"); err != nil {
			t.Fatal(err)
		}
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}()

	st, ps := stack()
	reopenParent(t, st, ps, "root")
	parent := st.Live("root")
	if got := st.Runtime.ChildrenUsage("root").Tokens(); got != 3100 {
		t.Fatalf("children's usage after the restart: %d tokens, want the stored child's 3100", got)
	}
	if _, err := parent.Prompt(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, ctx, parent)
	events, _ := parent.Session().Events()
	ends := turnEnds(events)
	if len(ends) != 2 || ends[1] != session.TurnEndBudget {
		t.Fatalf("turn ends %v, want the second turn ended by the tree limit (budget)", ends)
	}
	if got := st.Runtime.TreeUsage("root").Tokens(); got != 3100+2*110+2010 {
		t.Fatalf("tree after the restart: %d tokens", got)
	}
}
