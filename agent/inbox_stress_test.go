package agent_test

import (
	"context"
	"iter"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// TestInboxSplicesAccountForEveryItemUnderConcurrentUse drives one agent
// from several goroutines with random inbox calls, cancels, prompts with
// cancelled contexts and waits, then replays the inbox from the log: every
// splice must fit the queue it edits, and after Close nothing may be left
// queued (an item removed in memory without a splice would show up here).
func TestInboxSplicesAccountForEveryItemUnderConcurrentUse(t *testing.T) {
	for seed := range 20 {
		s := newSession(t)
		m := modelFunc(func(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
			return func(yield func(session.Chunk, error) bool) {
				if req.Caller.Call%3 == 0 {
					yield(session.Chunk{Type: session.ChunkToolCall, ID: "c", Name: "echo", Arguments: `{"text":"x"}`}, nil)
					return
				}
				yield(session.Chunk{Type: session.ChunkText, Text: "hi"}, nil)
			}
		})
		a := agent.New(s, agent.Options{Model: m, Tools: registry(t, echoTool()), MaxSteps: 4})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
				for range 30 {
					switch r.IntN(7) {
					case 0:
						a.Followup(userMsg("f"))
					case 1:
						a.Steer(userMsg("s"))
					case 2:
						a.Inject(userMsg("i"))
					case 3:
						a.Cancel(session.AbortReason{Kind: "user"}, r.IntN(2) == 0)
					case 4:
						ctx, cancel := context.WithCancel(context.Background())
						if r.IntN(2) == 0 {
							cancel()
						}
						go cancel()
						a.Prompt(ctx, userMsg("p"))
						cancel()
					case 5:
						a.WaitIdle(context.Background())
					case 6:
						a.Followup(userMsg("w"))
						a.WaitIdle(context.Background())
					}
				}
			}()
		}
		wg.Wait()
		a.Followup(userMsg("last"))
		if err := a.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Replay the inbox from the log.
		q := map[string][]string{}
		claimed := 0
		for _, ev := range s.MustEvents() {
			if ev.Type != session.TypeInboxSpliced {
				continue
			}
			d := decode[session.InboxSplicedData](t, ev)
			cur := q[d.Target]
			if d.Start < 0 || d.Start > len(cur) {
				t.Fatalf("seed %d seq %d: start %d out of range %d", seed, ev.Seq, d.Start, len(cur))
			}
			rm := 0
			if d.RemovedCount != nil {
				rm = *d.RemovedCount
			}
			if d.Start+rm > len(cur) {
				t.Fatalf("seed %d seq %d: remove %d at %d from %d", seed, ev.Seq, rm, d.Start, len(cur))
			}
			if d.Outcome != "canceled" {
				claimed += rm
			}
			var ins []string
			for _, m := range d.Inserted {
				ins = append(ins, m.ID)
			}
			next := append([]string(nil), cur[:d.Start]...)
			next = append(next, ins...)
			next = append(next, cur[d.Start+rm:]...)
			q[d.Target] = next
		}
		if len(q[session.InboxNextTurn])+len(q[session.InboxNextStep]) != 0 {
			t.Errorf("seed %d: queues not empty after close: %v", seed, q)
		}
	}
}
