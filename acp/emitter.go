package acp

// This file defines the per-session emitter: the queue through which every
// session/update of one session reaches the connection, in order.

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
)

// item is one unit of emitter work; exactly one field is set.
type item struct {
	update *agent.Update   // a live log event or tool progress
	replay []session.Event // a session/load replay of these events
	// replayOf is a replay of the first replayLen events of a live
	// session's log, read in batches as it is sent (from memory, or back
	// from the file where the session evicted them), so a large replay
	// never holds the whole log.
	replayOf  *session.Session
	replayLen int64
	again     bool          // replay with a fresh translator (session already streaming)
	closeOpen bool          // close every open tool call as failed
	barrier   chan struct{} // closed once everything before it was sent
	// direct updates are sent as they are, not derived from the log
	// (slash-command answers, notices, available commands).
	direct []acpsdk.SessionUpdate
	// hold blocks the queue until it is closed: what follows it waits
	// until a record appended behind it is durable (child_permission.go).
	hold <-chan struct{}
	// call sends frames the translator does not derive (the ACP v1
	// subagent frames of subagent_sessions.go), in queue order.
	call func()
	// between marks a live update pushed while no prompt of the session
	// was running (pushLive); recap sends the recaps such updates left
	// (the first item of a prompt: startPrompt).
	between bool
	recap   bool
}

// sendFunc delivers one update of the emitter's session to the client.
type sendFunc func(ctx context.Context, u acpsdk.SessionUpdate) error

// emitter serializes the session/update traffic of one session. Producers
// (the agent's subscriber callback, which runs under the session's append
// lock; tool goroutines reporting progress; request handlers) only append
// to the queue and never block. A drain goroutine, started on demand and
// exiting when the queue is empty, translates and sends items one at a
// time, so updates keep the log's total order and an idle session holds no
// goroutine. The owning Server waits for drains through wg.
//
// Sends use a context that is never cancelled: final updates of a
// cancelled prompt must still reach the client (acp.md §2.4).
type emitter struct {
	tr   *translator
	send sendFunc
	wg   goer
	log  *slog.Logger
	// durable, when set, makes the session's log durable through a seq
	// (Options.Durable bound to the session). It runs before a tool call
	// is shown (write-ahead, see doc.go).
	durable func(ctx context.Context, seq int64) error
	// durableText, when set, is the group-committed variant the emitter
	// waits on before showing a text or thought chunk (Options.DurableText);
	// nil falls back to durable.
	durableText func(ctx context.Context, seq int64) error
	// sendText, when set, sends a replayed text chunk update without the
	// SDK's generic encoding (replay.go); nil sends it as any update.
	sendText textSendFunc
	// sendRaw sends updates the SDK has no type for (context.go); nil
	// drops them.
	sendRaw rawSendFunc

	mu      sync.Mutex // guards the fields below
	queue   []item
	running bool // a drain goroutine is active
	paused  bool // items accumulate but are not drained (binding in progress)
	// replayErr is the first replay cut short because the log could not
	// be read back, until takeReplayErr (session/load answers it).
	replayErr error
	// prompting: a prompt of the session is running (startPrompt to
	// endPrompt). recaps are the notices of settlements translated while
	// none was, shown once at the start of the next one.
	prompting bool
	recaps    []acpsdk.SessionUpdate
}

// pushLive queues a live update of the session, marked when no prompt of
// it is running: a client that listens only during a prompt may drop it,
// so what it settles is shown again at the start of the next prompt.
func (e *emitter) pushLive(u agent.Update) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, item{update: &u, between: !e.prompting})
	e.kickLocked()
}

// startPrompt marks a prompt running and queues the recap of what settled
// since the last one, ahead of the prompt's own updates. Updates pushed
// before it in the queue are marked between prompts, those after it not.
func (e *emitter) startPrompt() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prompting = true
	e.queue = append(e.queue, item{recap: true})
	e.kickLocked()
}

// endPrompt marks the prompt over.
func (e *emitter) endPrompt() {
	e.mu.Lock()
	e.prompting = false
	e.mu.Unlock()
}

// takeReplayErr returns and clears the error of the first replay cut short
// since the last call (nil if none).
func (e *emitter) takeReplayErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.replayErr
	e.replayErr = nil
	return err
}

// goer starts an owned goroutine (the Server's tracker; a test's
// sync.WaitGroup).
type goer interface{ Go(func()) }

func newEmitter(tr *translator, send sendFunc, wg goer, log *slog.Logger) *emitter {
	return &emitter{tr: tr, send: send, wg: wg, log: log, paused: true}
}

// push appends it to the queue and makes sure a drain runs.
func (e *emitter) push(it item) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, it)
	e.kickLocked()
}

// pushFront puts it before everything queued so far. Used while paused, to
// place a load replay ahead of live events that raced in during binding.
func (e *emitter) pushFront(it item) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append([]item{it}, e.queue...)
	e.kickLocked()
}

// resume starts draining after binding.
func (e *emitter) resume() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.paused = false
	e.kickLocked()
}

// skipTo marks events below seq as already seen (a new session binds
// without a replay). Call it while paused.
func (e *emitter) skipTo(seq int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running {
		return
	}
	if seq > e.tr.next {
		e.tr.next = seq
	}
}

func (e *emitter) kickLocked() {
	if e.paused || e.running || len(e.queue) == 0 {
		return
	}
	e.running = true
	e.wg.Go(e.drain)
}

// hold queues a stop: nothing queued after it is sent until release is
// called. release is idempotent and must be called.
func (e *emitter) hold() (release func()) {
	ch := make(chan struct{})
	e.push(item{hold: ch})
	return sync.OnceFunc(func() { close(ch) })
}

// barrier queues a marker and returns a channel closed once every item
// queued before it has been sent.
func (e *emitter) barrier() <-chan struct{} {
	done := make(chan struct{})
	e.push(item{barrier: done})
	return done
}

func (e *emitter) drain() {
	for {
		e.mu.Lock()
		if len(e.queue) == 0 || e.paused {
			e.running = false
			e.mu.Unlock()
			return
		}
		it := e.queue[0]
		e.queue[0] = item{}
		e.queue = e.queue[1:]
		e.mu.Unlock()
		e.process(it)
	}
}

// isDurable makes sure a tool call or a streamed chunk is durable before
// it is shown (other events are not waited for). The agent made a call
// durable before running the tool, so this usually finds the watermark
// past it and costs nothing. A chunk waits for the group commit
// (durableText): one fsync per short window, shared by the chunks of
// that window. What cannot be made durable is not shown.
func (e *emitter) isDurable(ev session.Event) bool {
	d := e.durable
	switch ev.Type {
	case session.TypeToolCall:
	case session.TypeAssistantChunk:
		if e.durableText != nil {
			d = e.durableText
		}
	default:
		return true
	}
	if d == nil {
		return true
	}
	if err := d(context.Background(), ev.Seq); err != nil {
		e.log.Error("update not shown: its log record is not durable", "type", ev.Type, "seq", ev.Seq, "err", err)
		return false
	}
	return true
}

// process translates and sends one item. A panic in the translation is
// contained: logged, and the item dropped.
func (e *emitter) process(it item) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("session update panicked", "panic", p, "stack", string(debug.Stack()))
		}
		if it.barrier != nil {
			close(it.barrier)
		}
	}()
	sendOne := func(u acpsdk.SessionUpdate) {
		if err := e.send(context.Background(), u); err != nil {
			e.log.Debug("session update not sent", "err", err)
		}
	}
	sendAll := func(updates []acpsdk.SessionUpdate) {
		for _, u := range updates {
			sendOne(u)
		}
	}
	// sendRaw sends what tr queued as raw JSON (compaction_update), in
	// order before the updates of the same event.
	sendRaw := func(tr *translator) {
		for _, u := range tr.ctx.takeRaw() {
			if e.sendRaw == nil {
				continue
			}
			if err := e.sendRaw(context.Background(), u); err != nil {
				e.log.Debug("session update not sent", "err", err)
			}
		}
	}
	var updates []acpsdk.SessionUpdate
	switch {
	case it.update != nil && it.update.Event != nil:
		ev := *it.update.Event
		updates = e.tr.event(ev, false)
		if len(updates) > 0 && !e.isDurable(ev) {
			updates = nil
		}
		if recap := e.tr.takeRecap(); it.between && len(recap) > 0 {
			e.recaps = append(e.recaps, recap...)
		}
		sendRaw(e.tr)
	case it.update != nil && it.update.Progress != nil:
		updates = e.tr.progress(*it.update.Progress)
	case it.update != nil && it.update.Notice != nil:
		updates = e.tr.notice(*it.update.Notice)
		sendRaw(e.tr)
	case it.replay != nil || it.replayOf != nil:
		e.replayItem(it, sendOne, sendRaw)
	case it.closeOpen:
		updates = e.tr.closeOpen()
	case it.direct != nil:
		updates = it.direct
	case it.call != nil:
		it.call()
	case it.hold != nil:
		<-it.hold
	case it.recap:
		// Only the drain goroutine touches recaps.
		updates, e.recaps = e.recaps, nil
	}
	sendAll(updates)
}

// replayItem streams the replay item it: each event's updates are sent
// before the next event is translated, so a large replay never holds all
// its updates; runs of text chunks are merged (replay.go).
func (e *emitter) replayItem(it item, sendOne func(acpsdk.SessionUpdate), sendRaw func(*translator)) {
	tr := e.tr
	if it.again {
		tr = e.tr.fresh()
	}
	// Streamed: each event's updates are sent before the next event is
	// translated, so a large replay never holds all its updates; runs
	// of text chunks are merged (replay.go).
	m := chunkMerger{send: sendOne, sendText: e.sendText, log: e.log}
	err := it.replayed(func(ev session.Event) {
		if ev.Type != session.TypeAssistantChunk {
			m.flush() // a run never spans two model replies
		}
		us := tr.event(ev, true)
		if len(tr.ctx.raw) > 0 {
			m.flush()
			sendRaw(tr)
		}
		if len(us) > 0 && !e.isDurable(ev) {
			return // a live session's call a reload caught mid-checkpoint
		}
		for _, u := range us {
			m.add(u)
		}
	})
	if err != nil {
		e.log.Error("replay cut short: the session log could not be read back", "err", err)
		e.mu.Lock()
		if e.replayErr == nil {
			e.replayErr = err
		}
		e.mu.Unlock()
	}
	// A replay shows settlements where they are: nothing to recap.
	tr.takeRecap()
	// The replay ends with the usage it leaves the session at.
	for _, u := range tr.ctx.usageUpdate() {
		m.add(u)
	}
	m.flush()
	// A log that ends inside a turn (crash, or a live turn) keeps its
	// calls open; live events that follow will close them.
}

// replayBatch is the number of events a streamed replay reads at a time.
const replayBatch = 4096

// replayed calls fn for each event of the replay item it, in order: its
// slice, or its session's log read in batches. It stops at a read error.
func (it item) replayed(fn func(session.Event)) error {
	for _, ev := range it.replay {
		fn(ev)
	}
	if it.replayOf == nil {
		return nil
	}
	for from := int64(0); from < it.replayLen; from += replayBatch {
		batch, err := it.replayOf.EventsRange(int(from), int(min(from+replayBatch, it.replayLen)))
		if err != nil {
			return err
		}
		for _, ev := range batch {
			fn(ev)
		}
	}
	return nil
}
