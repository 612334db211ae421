package acp

// This file defines HeldQuestions: the questions children ask (a
// permission request; elicitation reuses it) that wait for their root
// session's next prompt. A client without clientCapabilities.subagents
// sees a child's question on the root session, and some such clients
// (CodeCompanion) route session/request_permission only to a prompt that
// is running: a question sent between prompts is dropped, never
// answered, and the child would wait for ever. So a question of a child
// asked while no prompt of its root runs is held; the next prompt of the
// root releases it (the prompt starts by asking it, and the root's model
// is told it is pending); and a question nobody answers within the
// deadline (Options.QuestionTimeout, 10 minutes by default) is refused
// with a reason that the child's model, a notice on the root session and
// the subagents/list rows show.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// CapQuestionsBetweenPrompts is the key of clientCapabilities._meta
// ["acp-agent"] by which a client says it answers requests also while no
// prompt runs (Zed, JetBrains do): a child's question is then asked at
// once, never held (its deadline still applies).
const CapQuestionsBetweenPrompts = "questionsBetweenPrompts"

// questionsAnytime reports whether the client answers requests between
// prompts (CapQuestionsBetweenPrompts).
func (s *Server) questionsAnytime() bool {
	s.mu.Lock()
	caps := s.clientCaps
	s.mu.Unlock()
	ns, ok := caps.Meta[MetaNamespace].(map[string]any)
	if !ok {
		return false
	}
	on, _ := ns[CapQuestionsBetweenPrompts].(bool)
	return on
}

// DefaultQuestionTimeout is how long a child's question may go unanswered
// before it is refused, unless Options.QuestionTimeout says otherwise.
const DefaultQuestionTimeout = 10 * time.Minute

// Question states a subagents/list row shows (QuestionState.State).
const (
	// QuestionHeld: asked while no prompt of the root ran; it waits for
	// the root's next prompt.
	QuestionHeld = "held"
	// QuestionRefused: nobody answered it within the deadline.
	QuestionRefused = "refused"
)

// QuestionState is what a listing shows of a child's last held question.
type QuestionState struct {
	State string `json:"state"`
	Title string `json:"title"`
	// Reason says why it was refused ("" while held).
	Reason string `json:"reason,omitempty"`
}

// HeldQuestion is one question of a child, held until a prompt of its
// root runs. Root, Child, Label and Title are set by the caller.
type HeldQuestion struct {
	Root  string // the root session asked (the client's view)
	Child string // the child session asking
	Label string // the child's label, as its calls are titled
	Title string // what it asks about
	// Ask, when set, is the question a child asks the person (ask_user)
	// rather than a permission.
	Ask bool

	release chan struct{} // closed when a prompt of Root starts
	asked   chan struct{} // closed by Asked
	once    sync.Once
	dropped bool // released because the root was released (Drop)
}

// Asked tells the prompt that released q that q is on the wire again (or
// will not be asked: it failed before). Idempotent.
func (q *HeldQuestion) Asked() {
	q.once.Do(func() { close(q.asked) })
}

// ErrQuestionDropped is Hold's error when the root session was released
// (closed, the connection ended) while the question was held.
var ErrQuestionDropped = errors.New("acp: the editor session of a held question was closed")

// errQuestionExpired is the cancel cause of a question's deadline.
var errQuestionExpired = errors.New("acp: nobody answered the question in time")

// HeldQuestions holds children's questions per root session. It is safe
// for concurrent use; its zero value is not: use NewHeldQuestions.
type HeldQuestions struct {
	timeout time.Duration
	after   func(time.Duration) <-chan time.Time

	mu     sync.Mutex
	active map[string]bool                // roots with a prompt running
	held   map[string][]*HeldQuestion     // by root, in order
	states map[string]QuestionState       // by child: its last held question
	roots  map[string]map[string]struct{} // by root: children with a state
}

// NewHeldQuestions returns a queue whose questions are refused after
// timeout (0: DefaultQuestionTimeout; negative: never). after is the
// clock (nil: time.After); tests pass a channel they fire by hand.
func NewHeldQuestions(timeout time.Duration, after func(time.Duration) <-chan time.Time) *HeldQuestions {
	if timeout == 0 {
		timeout = DefaultQuestionTimeout
	}
	return &HeldQuestions{
		timeout: timeout, after: after,
		active: map[string]bool{}, held: map[string][]*HeldQuestion{},
		states: map[string]QuestionState{}, roots: map[string]map[string]struct{}{},
	}
}

// Timeout is the deadline of a question (negative: none).
func (h *HeldQuestions) Timeout() time.Duration { return h.timeout }

// Deadline returns ctx ended, with cause errQuestionExpired (Expired
// tells), once the deadline passes; stop releases it and must be called.
// Without a deadline it returns ctx.
func (h *HeldQuestions) Deadline(ctx context.Context) (dctx context.Context, stop func()) {
	if h.timeout < 0 {
		return ctx, func() {}
	}
	dctx, cancel := context.WithCancelCause(ctx)
	var fire <-chan time.Time
	stopTimer := func() {}
	if h.after != nil {
		fire = h.after(h.timeout)
	} else {
		t := time.NewTimer(h.timeout)
		fire, stopTimer = t.C, func() { t.Stop() }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-fire:
			cancel(errQuestionExpired)
		case <-dctx.Done():
		}
	}()
	return dctx, func() {
		cancel(nil)
		<-done
		stopTimer()
	}
}

// Expired reports whether ctx (from Deadline) ended because the question's
// deadline passed.
func Expired(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errQuestionExpired) }

// Hold returns nil at once when a prompt of q.Root is running. Otherwise
// it holds q until the next prompt of q.Root starts (nil: ask it now, then
// call q.Asked), the root is released (ErrQuestionDropped) or ctx ends
// (its error; with Deadline's ctx, Expired tells a deadline).
func (h *HeldQuestions) Hold(ctx context.Context, q *HeldQuestion) error {
	q.release, q.asked = make(chan struct{}), make(chan struct{})
	h.mu.Lock()
	if h.active[q.Root] {
		h.mu.Unlock()
		return nil
	}
	h.held[q.Root] = append(h.held[q.Root], q)
	h.setStateLocked(q, QuestionState{State: QuestionHeld, Title: q.Title})
	h.mu.Unlock()
	select {
	case <-q.release:
		h.mu.Lock()
		dropped := q.dropped
		if !dropped {
			h.clearStateLocked(q)
		}
		h.mu.Unlock()
		if dropped {
			return ErrQuestionDropped
		}
		return nil
	case <-ctx.Done():
		h.mu.Lock()
		h.removeLocked(q)
		h.clearStateLocked(q)
		h.mu.Unlock()
		q.Asked()
		return context.Cause(ctx)
	}
}

// Begin marks a prompt of root running and releases the questions held
// for it, in the order they were asked: the prompt waits for each to be
// asked (WaitAsked) and tells its model they are pending.
func (h *HeldQuestions) Begin(root string) []*HeldQuestion {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active[root] = true
	qs := h.held[root]
	delete(h.held, root)
	for _, q := range qs {
		close(q.release)
	}
	return qs
}

// End marks the prompt of root over: later questions are held again.
func (h *HeldQuestions) End(root string) {
	h.mu.Lock()
	delete(h.active, root)
	h.mu.Unlock()
}

// Drop releases every question held for root with ErrQuestionDropped and
// forgets root's states (the root session was released).
func (h *HeldQuestions) Drop(root string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.held[root] {
		q.dropped = true
		close(q.release)
	}
	delete(h.held, root)
	delete(h.active, root)
	for child := range h.roots[root] {
		delete(h.states, child)
	}
	delete(h.roots, root)
}

// Refused records that q was refused for reason (listings show it).
func (h *HeldQuestions) Refused(q *HeldQuestion, reason string) {
	h.mu.Lock()
	h.setStateLocked(q, QuestionState{State: QuestionRefused, Title: q.Title, Reason: reason})
	h.mu.Unlock()
}

// State is what a listing shows of child's last held question; ok is
// false when it has none held or refused.
func (h *HeldQuestions) State(child string) (QuestionState, bool) {
	if h == nil {
		return QuestionState{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.states[child]
	return st, ok
}

// Held is the number of questions held for root now.
func (h *HeldQuestions) Held(root string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held[root])
}

// WaitAsked waits until every question of qs was asked (or failed), or
// ctx ends.
func WaitAsked(ctx context.Context, qs []*HeldQuestion) error {
	for _, q := range qs {
		select {
		case <-q.asked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (h *HeldQuestions) setStateLocked(q *HeldQuestion, st QuestionState) {
	h.states[q.Child] = st
	if h.roots[q.Root] == nil {
		h.roots[q.Root] = map[string]struct{}{}
	}
	h.roots[q.Root][q.Child] = struct{}{}
}

// clearStateLocked forgets q's held state (it is asked or gone); a
// refusal stays.
func (h *HeldQuestions) clearStateLocked(q *HeldQuestion) {
	if st, ok := h.states[q.Child]; ok && st.State == QuestionHeld {
		delete(h.states, q.Child)
	}
}

func (h *HeldQuestions) removeLocked(q *HeldQuestion) {
	qs := h.held[q.Root]
	for i, x := range qs {
		if x == q {
			h.held[q.Root] = append(qs[:i:i], qs[i+1:]...)
			break
		}
	}
	if len(h.held[q.Root]) == 0 {
		delete(h.held, q.Root)
	}
}

// pendingNote is the message that tells the root's model which questions
// of its children are pending (released by the prompt that starts).
func pendingNote(qs []*HeldQuestion) session.Message {
	var b strings.Builder
	b.WriteString("Note from the agent host: while no prompt was running, background subagents asked the user questions that are being asked again now and are still pending:")
	for _, q := range qs {
		who := q.Child
		if q.Label != "" {
			who = fmt.Sprintf("%s (%s)", q.Label, q.Child)
		}
		if q.Ask {
			fmt.Fprintf(&b, "\n- %s asks the user: %s", who, q.Title)
			continue
		}
		fmt.Fprintf(&b, "\n- %s asks permission for: %s", who, q.Title)
	}
	b.WriteString("\nThe subagents wait for the answers; answer the user's message as usual.")
	return hostNote(b.String(), "pending questions of background subagents")
}

// hostNote is a message from the agent host (not the person) for the
// model: replays do not show it as the user's.
func hostNote(text, summary string) session.Message {
	return session.Message{
		Role:    session.RoleUser,
		Content: []session.Block{session.Text(text)},
		Source:  session.Source{Kind: session.SourcePlugin, Plugin: AgentName, Form: "notice", Summary: summary},
	}
}

// expiredReason is why a question nobody answered within timeout is
// refused.
func expiredReason(timeout time.Duration) string {
	return fmt.Sprintf("nobody answered it within %s (a question of a background subagent waits for its parent session's next prompt; "+
		"the setting subagents.questionTimeout sets how long)", timeout)
}

// noticeQuestionRefused is the kind of the notice on the root session of a
// child's question refused at its deadline.
const noticeQuestionRefused = "question-refused"

// Questions is the server's held-question queue (Options.Questions).
func (s *Server) Questions() *HeldQuestions { return s.questions() }

// questions is the server's held-question queue (Options.Questions, else
// one with the default deadline).
func (s *Server) questions() *HeldQuestions {
	s.questionsOnce.Do(func() {
		s.held = s.opts.Questions
		if s.held == nil {
			s.held = NewHeldQuestions(0, nil)
		}
	})
	return s.held
}

// refuseExpired refuses q, which nobody answered in time: the listings
// show it refused (the child's own log records it, so they still do after
// a restart), the root session gets a notice (recorded, so a replay
// shows it too) and its model a note at its next turn, and the child's
// model the refusal with the reason.
func (s *Server) refuseExpired(b *bound, q *HeldQuestion, req workspace.PermissionRequest) error {
	return rejected(req, s.noteExpired(b, q))
}

// noteExpired records and tells everyone but the child's model that q was
// refused at its deadline (refuseExpired), and returns the reason.
func (s *Server) noteExpired(b *bound, q *HeldQuestion) string {
	h := s.questions()
	reason := expiredReason(h.Timeout())
	h.Refused(q, reason)
	who := q.Child
	if q.Label != "" {
		who = childTitleLabel(q.Label)
	}
	msg := fmt.Sprintf("The question of subagent %s (%s) about %s was refused: %s.", who, q.Child, q.Title, reason)
	if b.sess != nil {
		if _, err := b.sess.Append(session.TypeNotice, session.NoticeData{Kind: noticeQuestionRefused, Message: msg}, session.Ignorable()); err != nil {
			s.log.Warn("record the refusal of a child's question", "session_id", b.id, "err", err)
		}
	}
	s.recordRefusal(q, reason)
	if b.agent != nil {
		if _, err := b.agent.Inject(hostNote(msg, "a question of a background subagent was refused")); err != nil {
			s.log.Warn("tell the model of a refused question of a child", "session_id", b.id, "err", err)
		}
	}
	return reason
}

// askWatch tells held questions being asked again that their request
// (session/request_permission, or elicitation/create) was written
// (Server.out's after hook).
type askWatch struct {
	n  atomic.Int32 // watched questions: writes skip the match when none
	mu sync.Mutex
	by map[*HeldQuestion]askKey
}

// askKey is what the written request of a question holds: its method and
// a key only its request has.
type askKey struct{ method, key []byte }

// watch calls q.Asked once a request_permission about toolCallID is
// written; the returned func stops watching.
func (w *askWatch) watch(q *HeldQuestion, toolCallID string) (stop func()) {
	key, _ := json.Marshal(toolCallID)
	return w.watchKey(q, askKey{method: []byte(`"method":"session/request_permission"`), key: append([]byte(`"toolCallId":`), key...)})
}

// watchKey calls q.Asked once a request with k's method and key is
// written; the returned func stops watching.
func (w *askWatch) watchKey(q *HeldQuestion, k askKey) (stop func()) {
	w.mu.Lock()
	if w.by == nil {
		w.by = map[*HeldQuestion]askKey{}
	}
	w.by[q] = k
	w.n.Add(1)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if _, ok := w.by[q]; ok {
			delete(w.by, q)
			w.n.Add(-1)
		}
		w.mu.Unlock()
	}
}

// wrote sees message p once written.
func (w *askWatch) wrote(p []byte) {
	if w.n.Load() == 0 || !bytes.Contains(p, []byte(`"method":"`)) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for q, k := range w.by {
		if bytes.Contains(p, k.method) && bytes.Contains(p, k.key) {
			q.Asked()
		}
	}
}

// recordRefusal records in q.Child's own log that its question was
// refused for reason (delegation.TypeQuestionRefused): the catalog's
// listings read it from there, also after a restart, when the in-memory
// state of h is gone. A child no longer live is not written to.
func (s *Server) recordRefusal(q *HeldQuestion, reason string) {
	if s.opts.Sessions == nil {
		return
	}
	sess, ok := s.opts.Sessions.Get(q.Child)
	if !ok || sess.Header().Origin != session.OriginSubagent {
		return
	}
	rec := delegation.QuestionRefused{Title: q.Title, Reason: reason,
		Message: fmt.Sprintf("The question about %s was refused: %s.", q.Title, reason)}
	if _, err := sess.Append(delegation.TypeQuestionRefused, rec, session.Ignorable()); err != nil {
		s.log.Warn("record the refusal of a child's question in its log", "session_id", q.Child, "err", err)
	}
}
