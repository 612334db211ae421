package childtree

import (
	"encoding/json"
	"sync"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Kind says what an Event tells about a child.
type Kind int

const (
	// KindOpened: the child is followed from now on (Child.Start is the
	// first of its events that will come as KindUpdate). It is not yet
	// announced: its delegation may not be known.
	KindOpened Kind = iota + 1
	// KindAnnounced: the child's link names its delegation call (or, for a
	// child from before descriptors, its first turn ended). Comes once,
	// after KindOpened, possibly before any KindUpdate.
	KindAnnounced
	// KindUpdate: one event appended to the child's own log (Event.Session).
	KindUpdate
	// KindState: the child's activity changed (Event.State, Event.Stop).
	KindState
	// KindMessage: a message between the child and its parent (Event.Message).
	KindMessage
	// KindClosed: the child left the live store; nothing more comes for it.
	KindClosed
)

// State is a child's activity as its logs tell it.
type State string

const (
	// StateRunning: a turn of the child is in progress (turn/start).
	StateRunning State = "running"
	// StateIdle: the child's turn ended (turn/end; Event.Stop says why);
	// a continuable child can be prompted again.
	StateIdle State = "idle"
	// StateSettled: the parent recorded the child's settlement (a
	// subagent-settled notice in the parent's log naming the child).
	StateSettled State = "settled"
	// StateRequiresAction is a child blocked on a permission question. The
	// logs do not record it: the gate that asks (acp/child_permission.go)
	// knows it, so this package never emits it; it is named here so the
	// wire encodes one State type.
	StateRequiresAction State = "requires_action"
)

// Direction says which way a Message went.
type Direction int

const (
	// ToChild: the parent (coordinator) wrote into the child's log.
	ToChild Direction = iota + 1
	// FromChild: the child's report reached the parent's log.
	FromChild
)

// Message is one message between a child and its parent, as recorded in
// the recipient's log (Event is that log's user/message event).
type Message struct {
	Direction Direction
	// Recipient is the session whose log holds the message.
	Recipient string
	Event     session.Event
	Body      session.Message
}

// Event is one thing that happened to a followed child.
type Event struct {
	Kind  Kind
	Child *Child
	// Session is the appended event (KindUpdate).
	Session session.Event
	// State and Stop (the turn's end, for StateIdle) are set for KindState.
	State State
	Stop  *session.TurnEndReason
	// Message is set for KindMessage.
	Message *Message
}

// Link is what is known of a child's delegation: its parent, the
// delegation call that created it, its name and task. Fields are empty
// until known; HasTask tells an empty task from an unknown one.
type Link struct {
	ParentSession string
	ToolCallID    string
	Name          string
	Task          string
	HasTask       bool
}

// Child is one followed child session. Its header facts are fixed; its
// link grows as the descriptor and the first prompt are seen.
type Child struct {
	ID     string
	Parent string
	// Depth is the child's delegation depth (its header's).
	Depth int
	// Cwd is the child's working directory (its header's).
	Cwd string
	// Start is the length of the child's log when it was opened: earlier
	// events (a fork's seed, a resumed child's earlier turns) are not part
	// of this start and come as no KindUpdate.
	Start int64

	mu   sync.Mutex
	link Link
	// announced is touched only by the observer, whose callbacks for one
	// session are serialized.
	announced bool
}

// Link returns what is known of the child's delegation now.
func (c *Child) Link() Link {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link
}

// linked reports whether the link names the child's delegation call.
func (c *Child) linked() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link.ToolCallID != ""
}

// note updates the link from one of the child's events: its descriptor,
// and its first prompt from the user as its task.
func (c *Child) note(ev session.Event) {
	switch ev.Type {
	case session.TypeDescriptor:
		var d struct {
			Label  string `json:"label"`
			CallID string `json:"callId"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return
		}
		c.mu.Lock()
		if d.Label != "" {
			c.link.Name = d.Label
		}
		if d.CallID != "" {
			c.link.ToolCallID = d.CallID
		}
		c.mu.Unlock()
	case session.TypeUserMessage:
		msg, err := session.DecodeData[session.Message](ev)
		if err != nil || msg.Source.Kind != session.SourceUser {
			return
		}
		c.mu.Lock()
		if !c.link.HasTask {
			c.link.Task, c.link.HasTask = session.JoinText(msg.Content, "\n"), true
		}
		c.mu.Unlock()
	}
}

// noteHistory fills the link from what the child's log already holds (the
// descriptor of its creation seed; a resumed child's first prompt).
func (c *Child) noteHistory(sess *session.Session) {
	events, err := sess.Events()
	if err != nil {
		return
	}
	for _, ev := range events {
		c.note(ev)
		if c.Link().HasTask && c.linked() {
			break
		}
	}
}
