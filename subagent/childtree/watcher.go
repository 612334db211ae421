package childtree

import (
	"sync"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Store is the live session store a Watcher observes (*session.Store).
type Store interface {
	Observe(o *session.Observer) (unregister func())
}

// Watcher follows the children of the sessions Roots admits and their
// children, down the tree, and emits their Events.
type Watcher struct {
	// roots reports whether a parent session is served (bound) here: its
	// children are followed.
	roots func(parentID string) bool
	emit  func(Event)

	mu        sync.Mutex
	children  map[string]*Child // nil once stopped
	unobserve func()
}

// Follow starts following the children of the sessions roots admits.
// emit receives every Event; it is called under the session's append
// lock, so it must only queue. Stop ends the following.
func Follow(st Store, roots func(parentID string) bool, emit func(Event)) *Watcher {
	w := &Watcher{roots: roots, emit: emit, children: map[string]*Child{}}
	w.unobserve = st.Observe(&session.Observer{
		Created:  func(sess *session.Session, _ bool) { w.open(sess) },
		Appended: w.appended,
		Removed:  w.removed,
	})
	return w
}

// Stop ends the following: no Event is emitted after it returns (but one
// being emitted may still finish).
func (w *Watcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unobserve != nil {
		w.unobserve()
		w.unobserve = nil
	}
	w.children = nil
}

// child returns the followed child id, or nil.
func (w *Watcher) child(id string) *Child {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.children[id]
}

// open follows sess when it is a child of a root or of a child already
// followed, from the session's current length.
func (w *Watcher) open(sess *session.Session) {
	h := sess.Header()
	if h.ParentSession == "" {
		return
	}
	w.mu.Lock()
	_, followed := w.children[h.ParentSession]
	following := w.children != nil
	w.mu.Unlock()
	if !following || (!followed && !w.roots(h.ParentSession)) {
		return
	}
	c := &Child{ID: sess.ID(), Parent: h.ParentSession, Depth: h.DelegationDepth, Cwd: h.Cwd,
		link: Link{ParentSession: h.ParentSession}}
	// Read without the lock: a resumed child's log may come from its
	// file, and every session's appends pass through that lock.
	c.noteHistory(sess)
	c.Start = int64(sess.Len())
	w.emit(Event{Kind: KindOpened, Child: c})
	// Announced at once when the link already names the delegation; a
	// one-shot child's descriptor comes a few events into its first turn.
	if c.linked() {
		c.announced = true
		w.emit(Event{Kind: KindAnnounced, Child: c})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.children != nil { // not stopped meanwhile
		w.children[c.ID] = c
	}
}

// appended emits what ev tells: an update of a followed child (and its
// announcement, state, messages from its parent), or the settlement or
// report of a followed child recorded in its parent's log.
func (w *Watcher) appended(sess *session.Session, ev session.Event) {
	if c := w.child(sess.ID()); c != nil {
		w.childEvent(c, ev)
	}
	if ev.Type != session.TypeUserMessage {
		return
	}
	msg, err := session.DecodeData[session.Message](ev)
	if err != nil || msg.Source.SenderSessionID == "" {
		return
	}
	c := w.child(msg.Source.SenderSessionID)
	if c == nil || c.Parent != sess.ID() {
		return
	}
	switch msg.Source.Kind {
	case session.SourceSubagentReport:
		w.emit(Event{Kind: KindMessage, Child: c, Message: &Message{Direction: FromChild, Recipient: sess.ID(), Event: ev, Body: msg}})
	case session.SourceSubagentSettled:
		w.emit(Event{Kind: KindState, Child: c, State: StateSettled})
	}
}

// childEvent emits one event of followed child c's own log.
func (w *Watcher) childEvent(c *Child, ev session.Event) {
	c.note(ev)
	w.emit(Event{Kind: KindUpdate, Child: c, Session: ev})
	// Announced once its descriptor is seen (or, without one, once its
	// turn ends: a child from before descriptors named the call).
	if !c.announced && (c.linked() || ev.Type == session.TypeTurnEnd) {
		c.announced = true
		w.emit(Event{Kind: KindAnnounced, Child: c})
	}
	switch ev.Type {
	case session.TypeTurnStart:
		w.emit(Event{Kind: KindState, Child: c, State: StateRunning})
	case session.TypeTurnEnd:
		e := Event{Kind: KindState, Child: c, State: StateIdle}
		if d, err := session.DecodeData[session.TurnEndData](ev); err == nil {
			e.Stop = &d.Reason
		}
		w.emit(e)
	case session.TypeUserMessage:
		msg, err := session.DecodeData[session.Message](ev)
		if err == nil && msg.Source.Kind == session.SourceCoordinator {
			w.emit(Event{Kind: KindMessage, Child: c, Message: &Message{Direction: ToChild, Recipient: c.ID, Event: ev, Body: msg}})
		}
	}
}

// removed forgets a child that left the live store.
func (w *Watcher) removed(sess *session.Session) {
	w.mu.Lock()
	c := w.children[sess.ID()]
	delete(w.children, sess.ID())
	w.mu.Unlock()
	if c != nil {
		w.emit(Event{Kind: KindClosed, Child: c})
	}
}
