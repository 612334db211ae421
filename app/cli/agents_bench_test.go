package cli

import (
	"bytes"
	"context"
	"fmt"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/app/storetest"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/testhooks"
	"github.com/acp-agent/acp-agent/subagent"
)

// writeChildren writes the settled session "parent" and n settled
// continuable children of it, logs of about 1 KiB with their cache rows,
// dated an hour back. The parent's log delegates to every child (an
// assistant tool call, the call and its result naming the child), as the
// runtime writes it.
func writeChildren(t testing.TB, dir string, n int) {
	w := storetest.NewSettledWriter(t, dir)
	turn := func(seq int64, text string, middle ...session.Event) []session.Event {
		events := []session.Event{
			{Type: session.TypeTurnStart, Seq: seq, Time: 1, Data: session.MustData(session.TurnData{Turn: 1})},
			{Type: session.TypeUserMessage, Seq: seq + 1, Time: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.Message{ID: "u", Role: session.RoleUser, Content: []session.Block{session.Text(text)}, Source: session.Source{Kind: session.SourceUser}})},
		}
		for _, ev := range middle {
			ev.Seq = seq + int64(len(events))
			events = append(events, ev)
		}
		return append(events, session.Event{Type: session.TypeTurnEnd, Seq: seq + int64(len(events)), Time: 2, Data: session.MustData(session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: session.TurnEndCompleted}})})
	}
	ids := make([]string, n)
	var delegations []session.Event
	for i := range n {
		ids[i] = fmt.Sprintf("child-%05d", i)
		call := fmt.Sprintf("call_%d", i)
		args := fmt.Sprintf(`{"description":"part %d","prompt":"do part %d of the work"}`, i, i)
		delegations = append(delegations,
			session.Event{Type: session.TypeAssistantMessage, Time: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.AssistantMessageData{Turn: 1, Step: i + 1, Message: session.Message{
				ID: "a" + call, Role: session.RoleAssistant, Content: []session.Block{{Type: session.BlockToolCall, ID: call, Name: delegation.ToolSubagent, Arguments: args}},
				Source: session.Source{Kind: session.SourceModel, Provider: "scripted", Model: "scripted"}}, Finish: "tool-calls"})},
			session.Event{Type: session.TypeToolCall, Time: 1, Data: session.MustData(session.ToolCallData{Turn: 1, Step: i + 1, CallID: call, Name: delegation.ToolSubagent, Arguments: args})},
			session.Event{Type: session.TypeToolResult, Time: 1, SurfaceOp: session.AppendOp, Data: session.MustData(session.ToolResultData{Turn: 1, Step: i + 1, Message: session.Message{
				ID: "r" + call, Role: session.RoleUser, Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: call, Content: []session.Block{session.Text("started subagent " + ids[i])}}},
				Source: session.Source{Kind: session.SourceTool, CallID: call}}, Raw: delegation.ContinuableResult(ids[i]),
				Display: &session.ToolDisplay{Meta: delegation.ChildLink(ids[i], delegation.ModeContinuable, 1)}})},
		)
	}
	w.Write(session.Header{ID: "parent", CreatedAt: 1, Cwd: "/work/project"}, turn(0, "delegate the work", delegations...))
	desc, err := subagent.Descriptor{Mode: subagent.ModeContinuable, Provider: "spawn", Label: "bench child"}.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		h := session.Header{ID: id, CreatedAt: int64(100 + i), Cwd: "/work/project", ParentSession: "parent", Origin: session.OriginSubagent, DelegationDepth: 1}
		events := append([]session.Event{{Type: session.TypeDescriptor, Seq: 0, Time: 1, Data: desc}}, turn(1, strings.Repeat("please do the thing ", 35))...)
		w.Write(h, events)
	}
}

// BenchmarkAgentsCommand lists the direct children of one parent with n
// settled children (1 KiB logs, valid catalog index; the parent's log
// names every child), reporting the cost per child:
//
//	N/command    `acp-agent agents parent`, as a person runs it
//	N/inprocess  the running app's catalog (the same index, already open;
//	             the parent is stored, not live, so its log is read too)
//
//	go test ./app -run '^$' -bench 'AgentsCommand/(1000|10000)/' -benchtime 3x -benchmem
func BenchmarkAgentsCommand(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchAgents(b, n) })
	}
}

func benchAgents(b *testing.B, n int) {
	dir := b.TempDir()
	writeChildren(b, dir, n)
	b.Run("command", func(b *testing.B) {
		run := func(b *testing.B) {
			var errOut bytes.Buffer
			out := &countingWriter{}
			if code := Main(context.Background(), []string{"--data-dir", dir, "agents", "parent"}, strings.NewReader(""), out, &errOut, noEnv); code != ExitOK {
				b.Fatalf("exit %d: %s", code, errOut.String())
			}
			if out.lines != n+1 {
				b.Fatalf("%d lines", out.lines)
			}
		}
		run(b) // builds the index
		perItem(b, n, "child", run)
	})
	b.Run("inprocess", func(b *testing.B) {
		a, err := app.New(app.Config{DataDir: dir, Testing: &testhooks.Hooks{NoSync: true}, Sources: &session.DeterministicSources{}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		list := func(b *testing.B) {
			rows, err := a.Catalog.ListChildren(b.Context(), "parent")
			if err != nil || len(rows) != n || rows[0].Kind != subagent.KindChild {
				b.Fatalf("%d rows, %v", len(rows), err)
			}
		}
		list(b)
		perItem(b, n, "child", list)
	})
}

// perItem runs op over n items in the benchmark loop and reports its
// wall and CPU time per item, as ns/<item> and cpu-ns/<item> (CPU time:
// all goroutines, kernel included; on a shared machine it swings less
// with the load than wall time).
func perItem(b *testing.B, n int, item string, op func(*testing.B)) {
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for b.Loop() {
		op(b)
	}
	b.StopTimer()
	per := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/"+item)
	b.ReportMetric(float64(processCPU()-cpu)/per, "cpu-ns/"+item)
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
