package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/subagent"
	"github.com/acp-agent/acp-agent/subagent/subagenttest"
)

// C95 (subagent-contract.md §5.7): shutting the agent down drains the
// subagent runtime. A continuable child inside its model call when the
// client goes away is cancelled by the drain (cause parent), its epoch
// ends "aborted" before Serve returns, the notice is injected into its
// parent without a turn and its log survives on disk.
func TestShutdownDrainsContinuableChildren(t *testing.T) {
	ctx := t.Context()
	entered := make(chan struct{})
	var once sync.Once
	m := &subagenttest.FuncModel{Fn: func(ctx context.Context, req model.Request) ([]session.Chunk, error) {
		if req.Caller.ScriptKey == "child" {
			once.Do(func() { close(entered) })
			return subagenttest.Hang(ctx)
		}
		return subagenttest.Text("parent answer"), nil
	}}
	a, err := New(Config{DataDir: t.TempDir(), Testing: &testhooks.Hooks{Model: m, NoSync: true},
		Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Cleanup(func() { // only needed when the drain did not run
		_ = a.Subagents.Drain(context.Background())
		for _, ag := range a.Agents.List() {
			_ = ag.Close(context.Background())
		}
	})
	var (
		mu   sync.Mutex
		ends []subagent.LifecycleEvent
	)
	a.Subagents.OnLifecycle(func(ev subagent.LifecycleEvent) {
		if ev.Type == subagent.EventEnd {
			mu.Lock()
			ends = append(ends, ev)
			mu.Unlock()
		}
	})
	s, err := a.Sessions.Create(session.Header{Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := a.NewAgent(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Agents.Register(parent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Subagents.StartContinuable(ctx, subagent.ContinuableSpec{
		Provider: "spawn", Label: "child", ChildID: "c95", Prompt: []session.Block{session.Text("work")}, Parent: parent,
	}); err != nil {
		t.Fatal(err)
	}
	<-entered

	if err := a.Serve(ctx, strings.NewReader(""), io.Discard); err != nil {
		t.Fatalf("serve: %v", err)
	}
	mu.Lock()
	got := ends
	mu.Unlock()
	if len(got) != 1 || got[0].ID != "c95" || got[0].StopReason != "aborted" {
		t.Fatalf("end edges when Serve returned = %+v, want c95 aborted", got)
	}
	if a.Subagents.Resident("c95") {
		t.Error("the child is still resident after shutdown")
	}
	var notice string
	for _, ev := range s.MustEvents() {
		if ev.Type == session.TypeInboxSpliced {
			d, _ := session.DecodeData[session.InboxSplicedData](ev)
			if len(d.Inserted) == 1 && d.Inserted[0].Source.Kind == "subagent-settled" {
				notice = session.JoinText(d.Inserted[0].Content, "\n")
			}
		}
		if ev.Type == session.TypeTurnStart {
			t.Error("the parent ran a turn on the shutdown notice")
		}
	}
	if want := "Background subagent c95 was stopped before it finished.\nIt left no closing message."; notice != want {
		t.Errorf("notice = %q, want %q", notice, want)
	}
	snap, err := a.Persist.Inspect(ctx, "c95")
	if err != nil {
		t.Fatalf("the child's log did not survive: %v", err)
	}
	var reasons []string
	for _, ev := range snap.Events {
		if ev.Type == session.TypeTurnEnd {
			d, _ := session.DecodeData[session.TurnEndData](ev)
			if d.Reason.Reason != nil {
				reasons = append(reasons, d.Reason.Kind+":"+d.Reason.Reason.Kind)
			}
		}
	}
	if strings.Join(reasons, ",") != "aborted:parent" {
		t.Errorf("child turn ends on disk = %v, want [aborted:parent]", reasons)
	}
}
