package subagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
	"github.com/acp-agent/acp-agent/subagent/worktree"
)

// leaseStack is a durable stack working in repo whose child factory fails
// while *failBuild is set; intents go to intents.
func leaseStack(t *testing.T, repo, intents string, sc *script, failBuild *atomic.Bool) *subagenttest.Stack {
	t.Helper()
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return subagenttest.New(t, subagenttest.Config{
		Model: &subagenttest.FuncModel{Fn: sc.respond}, Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		Worktrees: worktree.Git{Env: gitEnv}, ParentCwd: repo, WorktreeIntents: worktree.Intents{Dir: intents},
		WrapFactory: func(f subagent.AgentFactory) subagent.AgentFactory {
			return func(s *session.Session, spec subagent.ChildSpec) (*agent.Agent, error) {
				if failBuild.Load() {
					return nil, errors.New("injected: the agent cannot be built")
				}
				return f(s, spec)
			}
		},
	})
}

// nothingLeft fails when repo holds an acp-agent worktree or branch, or
// the journal an intent.
func nothingLeft(t *testing.T, repo, intents string) {
	t.Helper()
	if b := runGit(t, repo, "branch", "--list", "acp-agent/*"); b != "" {
		t.Errorf("branches left: %q", b)
	}
	if entries, _ := os.ReadDir(filepath.Join(repo, ".acp-agent", "worktrees")); len(entries) > 0 {
		t.Errorf("worktree folder holds %v", entries)
	}
	if entries, _ := os.ReadDir(intents); len(entries) > 0 {
		t.Errorf("intents left: %v", entries)
	}
	if s := runGit(t, repo, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("status not clean:\n%s", s)
	}
}

// Every path that ends a worktree child before it runs ends its worktree
// the same way: a failed build of a continuable or a one-shot start, a
// cancelled start, and a failed cold resume of a child whose untouched
// worktree was removed at settlement (restored, then removed again).
func TestWorktreeLeaseEndsWithTheStart(t *testing.T) {
	ctx := testCtx(t)
	repo := gitRepo(t)
	intents := filepath.Join(t.TempDir(), "intents")
	var failBuild atomic.Bool
	sc := newScript().text("clean", "nothing to do").text("main", "NOTED", "NOTED")
	st := leaseStack(t, repo, intents, sc, &failBuild)
	lc := record(st.Runtime)
	parent := st.NewParent(t, "parent")

	failBuild.Store(true)
	if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: "spawn", Label: "clean", Prompt: text("x"), Parent: parent, Isolation: subagent.IsolationWorktree,
	}); err == nil {
		t.Fatal("a start whose agent cannot be built succeeded")
	}
	nothingLeft(t, repo, intents)
	if _, _, err := st.Runtime.StartIsolated(ctx, "spawn", subagent.OneShotRequest{
		Label: "clean", Prompt: text("x"), Parent: parent, Isolation: subagent.IsolationWorktree,
	}); err == nil {
		t.Fatal("a one-shot start whose agent cannot be built succeeded")
	}
	nothingLeft(t, repo, intents)
	failBuild.Store(false)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := st.Runtime.StartContinuable(cancelled, subagent.ContinuableSpec{
		Provider: "spawn", Label: "clean", Prompt: text("x"), Parent: parent, Isolation: subagent.IsolationWorktree,
	}); err == nil {
		t.Fatal("a cancelled start succeeded")
	}
	nothingLeft(t, repo, intents)

	id, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: "spawn", Label: "clean", Prompt: text("x"), Parent: parent, Isolation: subagent.IsolationWorktree,
	})
	if err != nil {
		t.Fatal(err)
	}
	lc.waitEnds(t, ctx, id, 1)
	nothingLeft(t, repo, intents) // untouched: removed at settlement

	failBuild.Store(true)
	if _, err := st.Runtime.Followup(ctx, parent, id, text("again")); err == nil {
		t.Fatal("a cold resume whose agent cannot be built succeeded")
	}
	nothingLeft(t, repo, intents)
}

// A start whose requested model route no configured model serves fails
// with MODEL_NOT_CONFIGURED naming the route, before anything is made (no
// session, no worktree); an inherited route is not checked.
func TestUnconfiguredRouteFailsTheStart(t *testing.T) {
	ctx := testCtx(t)
	repo := gitRepo(t)
	intents := filepath.Join(t.TempDir(), "intents")
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	sc := newScript().text("inherit", "done").text("main", "NOTED")
	st := subagenttest.New(t, subagenttest.Config{
		Model: &subagenttest.FuncModel{Fn: sc.respond}, Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		Worktrees: worktree.Git{Env: gitEnv}, ParentCwd: repo, WorktreeIntents: worktree.Intents{Dir: intents},
		CheckRoute: func(r model.Route) error {
			if r.Provider == "other" {
				return errors.New(`model route "other/big" is not configured in this agent`)
			}
			return nil
		},
	})
	parent := st.NewParent(t, "parent")
	for _, oneShot := range []bool{false, true} {
		var err error
		if oneShot {
			_, _, err = st.Runtime.StartIsolated(ctx, "spawn", subagent.OneShotRequest{Label: "big", Prompt: text("x"), Parent: parent,
				Route: &model.Route{Provider: "other", Model: "big"}, Isolation: subagent.IsolationWorktree})
		} else {
			_, _, err = st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "big", Prompt: text("x"), Parent: parent,
				Route: &model.Route{Provider: "other", Model: "big"}, Isolation: subagent.IsolationWorktree})
		}
		var se *subagent.SubagentError
		if !errors.As(err, &se) || se.Code != subagent.CodeModelNotConfigured || !strings.Contains(err.Error(), `"other/big"`) {
			t.Fatalf("one-shot %v: got %v", oneShot, err)
		}
		nothingLeft(t, repo, intents)
	}
	if _, _, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{Provider: "spawn", Label: "inherit", Prompt: text("x"), Parent: parent}); err != nil {
		t.Fatalf("an inherited route was refused: %v", err)
	}
}

// slowAdd is git whose checkout lasts until it is cancelled.
type slowAdd struct {
	worktree.Git
	started chan struct{}
}

func (s slowAdd) Add(ctx context.Context, wt worktree.Worktree) error {
	close(s.started)
	<-ctx.Done()
	return context.Cause(ctx)
}

// An Async start returns before its checkout ends; meanwhile the child is
// listed as starting; an interrupt cancels the checkout, nothing is left,
// and the watch ends with an error.
func TestAsyncStartIsInterruptible(t *testing.T) {
	ctx := testCtx(t)
	repo := gitRepo(t)
	intents := filepath.Join(t.TempDir(), "intents")
	ps, err := persistence.Open(t.TempDir(), persistence.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	sc := newScript().text("main", "NOTED", "NOTED")
	git := slowAdd{worktree.Git{Env: gitEnv}, make(chan struct{})}
	st := subagenttest.New(t, subagenttest.Config{
		Model: &subagenttest.FuncModel{Fn: sc.respond}, Attach: func(s *session.Store) { ps.Attach(s) }, Durable: durable{ps}, SyncTo: ps.SyncTo,
		Worktrees: git, ParentCwd: repo, WorktreeIntents: worktree.Intents{Dir: intents},
	})
	parent := st.NewParent(t, "parent")
	settled := make(chan string, 1)
	id, msg, err := st.Runtime.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: "spawn", Label: "slow", Prompt: text("x"), Parent: parent, Isolation: subagent.IsolationWorktree, Async: true,
		OnSettled: func(stop string, _ *subagent.WorktreeOutcome) string { settled <- stop; return "" },
	})
	if err != nil || msg != "" {
		t.Fatalf("start: %q %v", msg, err)
	}
	<-git.started
	if got := st.Runtime.Starting(parent.ID()); len(got) != 1 || got[0].ID != id || got[0].Label != "slow" {
		t.Fatalf("starting %+v", got)
	}
	if err := st.Runtime.Interrupt(id, subagent.UserAuthority("someone-else")); err == nil {
		t.Error("another parent interrupted the start")
	}
	if err := st.Runtime.Interrupt(id, subagent.UserAuthority(parent.ID())); err != nil {
		t.Fatal(err)
	}
	select {
	case stop := <-settled:
		if stop != "error" {
			t.Errorf("stop %q", stop)
		}
	case <-ctx.Done():
		t.Fatal("the interrupted start never ended its watch")
	}
	for len(st.Runtime.Starting(parent.ID())) > 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	nothingLeft(t, repo, intents)
}
