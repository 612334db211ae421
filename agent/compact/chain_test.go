package compact

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/session"
)

// chain drives a real session log through turns and compactions planned by
// Cut and StubEnough, and tracks what every summary saw (the messages its
// summary request held, and what the summaries among them saw).
type chain struct {
	t     *testing.T
	s     *session.Session
	turns int
	all   []int64                   // seqs of every surface message appended
	saw   map[string]map[int64]bool // summary id -> original messages it covers
	n     int
}

func newChain(t *testing.T) *chain {
	s, err := session.NewStore(&session.DeterministicSources{}).Create(session.Header{ID: "chain"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &chain{t: t, s: s, saw: map[string]map[int64]bool{}}
}

func (c *chain) append(typ string, data any) {
	c.t.Helper()
	ev, err := c.s.Append(typ, data, session.WithSurface(session.AppendOp))
	if err != nil {
		c.t.Fatal(err)
	}
	c.all = append(c.all, ev.Seq)
}

// turn appends a user message and calls tool calls with results of size
// bytes each, then a final answer.
func (c *chain) turn(calls, size int) {
	c.turns++
	c.append(session.TypeUserMessage, session.Message{ID: fmt.Sprintf("u%d", c.turns), Role: session.RoleUser,
		Source: session.Source{Kind: session.SourceUser}, Content: []session.Block{session.Text(fmt.Sprintf("turn %d", c.turns))}})
	for i := range calls {
		id := fmt.Sprintf("c%d.%d", c.turns, i)
		c.append(session.TypeAssistantMessage, session.AssistantMessageData{Message: session.Message{ID: "a" + id, Role: session.RoleAssistant,
			Source:  session.Source{Kind: session.SourceModel},
			Content: []session.Block{{Type: session.BlockToolCall, ID: id, Name: "read", Arguments: `{"path":"é` + strings.Repeat("ü", 150) + `"}`}}}})
		c.append(session.TypeToolResult, session.ToolResultData{Message: session.Message{ID: "r" + id, Role: session.RoleUser,
			Source:  session.Source{Kind: session.SourceTool, CallID: id},
			Content: []session.Block{{Type: session.BlockToolResult, ToolCallID: id, Content: []session.Block{session.Text(strings.Repeat("x", size))}}}}})
	}
	c.append(session.TypeAssistantMessage, session.AssistantMessageData{Message: session.Message{ID: fmt.Sprintf("f%d", c.turns), Role: session.RoleAssistant,
		Source: session.Source{Kind: session.SourceModel}, Content: []session.Block{session.Text("done")}}})
}

func (c *chain) view() []session.SurfaceMessage {
	c.t.Helper()
	h, err := session.History(c.s.MustEvents())
	if err != nil {
		c.t.Fatal(err)
	}
	return h
}

// summarize plans a summary compaction like the agent does and records it.
func (c *chain) summarize(keep int, force bool) bool {
	c.t.Helper()
	p, ok := Cut(c.view(), keep, force)
	if !ok {
		return false
	}
	c.n++
	id := fmt.Sprintf("s%d", c.n)
	saw := map[int64]bool{}
	for _, m := range p.Covered {
		if m.Message.Source.Kind == session.SourceCompaction {
			for seq := range c.saw[m.Message.ID] {
				saw[seq] = true
			}
			continue
		}
		saw[m.Seq] = true
	}
	c.saw[id] = saw
	c.record(session.CompactionData{ID: id, Trigger: session.TriggerAuto, Outcome: session.CompactionCompleted, UpTo: p.UpTo, Summary: "summary " + id})
	return true
}

// stub plans a stub-only compaction like the agent does and records it.
func (c *chain) stub() bool {
	c.t.Helper()
	upTo, _, _ := StubEnough(c.view(), 0, 1<<30)
	if upTo == 0 {
		return false
	}
	c.n++
	c.record(session.CompactionData{ID: fmt.Sprintf("t%d", c.n), Trigger: session.TriggerAuto, Outcome: session.CompactionCompleted, StubUpTo: upTo})
	return true
}

func (c *chain) record(d session.CompactionData) {
	c.t.Helper()
	if _, err := c.s.Append(session.TypeCompaction, d); err != nil {
		c.t.Fatal(err)
	}
	c.check()
}

// check: every message appended is in the view once, or covered by a
// summary in the view that saw it; every tool result in the view follows
// its call; stubs are valid UTF-8 and only replace results before the
// newest person's message.
func (c *chain) check() {
	c.t.Helper()
	h := c.view()
	in := map[int64]int{}
	covered := map[int64]bool{}
	calls := map[string]bool{}
	lastUser := -1
	for i, m := range h {
		if m.Message.Source.Kind == session.SourceUser {
			lastUser = i
		}
	}
	for i, m := range h {
		if m.Message.Source.Kind == session.SourceCompaction {
			if i != 0 {
				c.t.Fatalf("summary %s at position %d, want 0", m.Message.ID, i)
			}
			for seq := range c.saw[m.Message.ID] {
				covered[seq] = true
			}
			continue
		}
		in[m.Seq]++
		for _, b := range m.Message.Content {
			switch b.Type {
			case session.BlockToolCall:
				calls[b.ID] = true
			case session.BlockToolResult:
				if !calls[b.ToolCallID] {
					c.t.Fatalf("tool result %s in the view without its call before it", b.ToolCallID)
				}
				body := session.JoinText(b.Content, "")
				if strings.HasPrefix(body, "[result of ") && i > lastUser {
					c.t.Fatalf("result %s of the newest turn stubbed", b.ToolCallID)
				}
				if !utf8.ValidString(body) {
					c.t.Fatalf("stub of %s is not valid UTF-8: %q", b.ToolCallID, body)
				}
			}
		}
	}
	for _, seq := range c.all {
		if in[seq] > 1 {
			c.t.Fatalf("message %d is in the view %d times", seq, in[seq])
		}
		if in[seq] == 0 && !covered[seq] {
			c.t.Fatalf("message %d vanished: neither in the view nor covered by a summary in it (view %s)", seq, describe(h))
		}
	}
}

// sizeFrom is the estimate Cut makes of the view from index i on.
func (c *chain) sizeFrom(i int) int {
	n := 0
	for _, m := range c.view()[i:] {
		n += budget.EstimateBlocks(m.Message.Content) + 4
	}
	return n
}

func describe(h []session.SurfaceMessage) string {
	var b strings.Builder
	for _, m := range h {
		fmt.Fprintf(&b, "%d:%s ", m.Seq, m.Message.Source.Kind)
	}
	return b.String()
}

// TestCompactionChainsKeepEveryMessage walks chains of compactions: a
// summary of a summary (the second cut covers only the first summary and
// keeps the tool call and result after it), a cut right before a summary's
// kept turn, stubs then a summary, a summary then stubs, and random mixes.
func TestCompactionChainsKeepEveryMessage(t *testing.T) {
	const big = 70_000 // ~23k tokens per result
	t.Run("summary of a summary", func(t *testing.T) {
		c := newChain(t)
		c.turn(1, big)
		c.turn(1, big)
		if !c.summarize(c.sizeFrom(4), false) { // covers turn 1, keeps turn 2
			t.Fatal("no cut")
		}
		// Keep everything but the summary: the cut names the summary alone.
		if !c.summarize(c.sizeFrom(1), false) {
			t.Fatal("no second cut")
		}
		h := c.view()
		if len(h) != 5 || h[0].Message.ID != "s2" {
			t.Fatalf("view %s, want the second summary and the whole second turn", describe(h))
		}
		body := session.JoinText(h[3].Message.Content[0].Content, "")
		if len(body) != big {
			t.Fatalf("kept tool result is %d bytes, want %d", len(body), big)
		}
		c.turn(1, big)
		c.summarize(0, false)
		c.summarize(0, true)
	})
	t.Run("cut before a summary's kept turn", func(t *testing.T) {
		c := newChain(t)
		c.turn(2, big)
		c.turn(0, 10)
		c.summarize(0, false)
		c.turn(1, big)
		c.summarize(0, false) // covers the summary and turn 2, keeps turn 3
		c.turn(0, 10)
		c.summarize(0, false)
	})
	t.Run("stubs then a summary", func(t *testing.T) {
		c := newChain(t)
		c.turn(2, big)
		c.turn(1, big)
		if !c.stub() {
			t.Fatal("no stub")
		}
		c.turn(1, big)
		c.summarize(24_000, false)
		c.stub()
		c.turn(1, big)
		c.stub()
		c.summarize(0, false)
	})
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("random %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 34))
			c := newChain(t)
			for range 30 {
				switch r.IntN(4) {
				case 0, 1:
					c.turn(r.IntN(3), 1+r.IntN(big/4))
				case 2:
					c.summarize(r.IntN(15_000), r.IntN(5) == 0)
				case 3:
					c.stub()
				}
			}
			c.check()
		})
	}
}
