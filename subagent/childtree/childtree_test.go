package childtree_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/subagent/childtree"
)

// collector records the Events as "kind child detail" lines.
type collector struct {
	mu    sync.Mutex
	lines []string
	last  map[string]*childtree.Child
}

func (c *collector) emit(ev childtree.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]*childtree.Child{}
	}
	c.last[ev.Child.ID] = ev.Child
	line := fmt.Sprintf("%d %s", ev.Kind, ev.Child.ID)
	switch ev.Kind {
	case childtree.KindUpdate:
		line += " " + ev.Session.Type
	case childtree.KindState:
		line += " " + string(ev.State)
		if ev.Stop != nil {
			line += " " + ev.Stop.Kind
		}
	case childtree.KindMessage:
		line += fmt.Sprintf(" dir=%d to=%s %s", ev.Message.Direction, ev.Message.Recipient, session.JoinText(ev.Message.Body.Content, ""))
	}
	c.lines = append(c.lines, line)
}

func (c *collector) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.lines
	c.lines = nil
	return out
}

func mustAppend(t *testing.T, s *session.Session, typ string, data any) {
	t.Helper()
	if _, err := s.Append(typ, data); err != nil {
		t.Fatalf("append %s: %v", typ, err)
	}
}

func message(kind, sender, text string) session.Message {
	return session.Message{Role: session.RoleUser, Content: []session.Block{session.Text(text)},
		Source: session.Source{Kind: kind, SenderSessionID: sender}}
}

// TestWatcherFollowsTheTree: children of a root and their children are
// followed from their start, announced once their descriptor names the
// delegation call, and their turns, messages and settlement come as
// events; a session outside the tree gives none, and nothing comes after
// Stop.
func TestWatcherFollowsTheTree(t *testing.T) {
	st := session.NewStore(&session.DeterministicSources{})
	root, err := st.Create(session.Header{Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.Create(session.Header{Cwd: "/w"}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	w := childtree.Follow(st, func(id string) bool { return id == root.ID() }, c.emit)

	kid, err := st.Create(session.Header{Cwd: "/w/kid", ParentSession: root.ID(), DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := st.Create(session.Header{ParentSession: other.ID(), DelegationDepth: 1}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := kid.ID()
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"opened, not announced", func() {}, []string{"1 " + k}},
		{"task before the descriptor", func() {
			mustAppend(t, kid, session.TypeUserMessage, message(session.SourceUser, "", "Remember 42."))
		}, []string{"3 " + k + " user/message"}},
		{"descriptor announces", func() {
			mustAppend(t, kid, session.TypeDescriptor, map[string]string{"label": "Keeper", "callId": "call-1"})
		}, []string{"3 " + k + " subagent/descriptor", "2 " + k}},
		{"a turn", func() {
			mustAppend(t, kid, session.TypeTurnStart, session.TurnData{Turn: 1})
			mustAppend(t, kid, session.TypeTurnEnd, session.TurnEndData{Turn: 1, Reason: session.TurnEndReason{Kind: "completed"}})
		}, []string{"3 " + k + " turn/start", "4 " + k + " running", "3 " + k + " turn/end", "4 " + k + " idle completed"}},
		{"parent writes to the child", func() {
			mustAppend(t, kid, session.TypeUserMessage, message(session.SourceCoordinator, root.ID(), "Which number?"))
		}, []string{"3 " + k + " user/message", fmt.Sprintf("5 %s dir=%d to=%s Which number?", k, childtree.ToChild, k)}},
		{"child reports and settles in the parent's log", func() {
			mustAppend(t, root, session.TypeUserMessage, message(session.SourceSubagentReport, k, "42"))
			mustAppend(t, root, session.TypeUserMessage, message(session.SourceSubagentSettled, k, "done"))
		}, []string{fmt.Sprintf("5 %s dir=%d to=%s 42", k, childtree.FromChild, root.ID()), "4 " + k + " settled"}},
		{"outside the tree", func() {
			mustAppend(t, stranger, session.TypeTurnStart, session.TurnData{Turn: 1})
		}, nil},
	}
	for _, s := range steps {
		s.do()
		if got := c.take(); !slices.Equal(got, s.want) {
			t.Fatalf("%s: events\n%q\nwant\n%q", s.name, got, s.want)
		}
	}
	if l := c.last[k].Link(); l != (childtree.Link{ParentSession: root.ID(), ToolCallID: "call-1", Name: "Keeper", Task: "Remember 42.", HasTask: true}) {
		t.Errorf("link = %+v", l)
	}
	if ch := c.last[k]; ch.Depth != 1 || ch.Cwd != "/w/kid" || ch.Parent != root.ID() || ch.Start != 0 {
		t.Errorf("child = %+v", ch)
	}

	grand, err := st.Create(session.Header{ParentSession: k, DelegationDepth: 2}, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Equal(got, []string{"1 " + grand.ID()}) {
		t.Fatalf("grandchild: %q", got)
	}
	if err := st.Remove(k); err != nil {
		t.Fatal(err)
	}
	if got := c.take(); !slices.Equal(got, []string{"6 " + k}) {
		t.Fatalf("removed: %q", got)
	}
	w.Stop()
	mustAppend(t, grand, session.TypeTurnStart, session.TurnData{Turn: 1})
	if got := c.take(); len(got) != 0 {
		t.Fatalf("after Stop: %q", got)
	}
}
