package subagent

// This file keeps the live digest of a running child: a few readable lines
// (its turn and tokens, one line per tool call, the last line of its text,
// its outcome) that its delegation's tool call on the parent shows while
// the child works, throttled and capped so a child making thousands of
// calls costs its parent's connection a few updates a second at most.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver"
)

// Digest limits. DigestMaxCalls tool-call lines are kept, older ones are
// folded into a count; a rendered digest never exceeds DigestMaxBytes.
const (
	DigestMaxCalls = 8
	DigestMaxBytes = 2048
	// DigestEvery is the default throttle period: at most one update per
	// period, and the last state is always sent.
	DigestEvery = 250 * time.Millisecond
	// digestLineRunes bounds one line of the digest.
	digestLineRunes = 120
)

// DigestOptions configures how often a child's digest is sent.
type DigestOptions struct {
	// Every is the throttle period (0: DigestEvery).
	Every time.Duration
	// Ticks, when set, replaces the real ticker: each value received is one
	// throttle period (tests and benchmarks drive it by hand). stop releases
	// it.
	Ticks func() (ticks <-chan time.Time, stop func())
	// Sync sends every change at once from the child's goroutine and no
	// ticker runs (scenario runs: the wire then depends only on the child's
	// events). A background child then shows only its final digest, which
	// comes with its settlement notice: its intermediate states would
	// interleave with the parent's own stream by scheduling.
	Sync bool
}

func (o DigestOptions) ticker() (<-chan time.Time, func()) {
	if o.Ticks != nil {
		return o.Ticks()
	}
	every := o.Every
	if every <= 0 {
		every = DigestEvery
	}
	t := time.NewTicker(every)
	return t.C, t.Stop
}

// digestCall is one tool call of the child.
type digestCall struct {
	id, kind, title, status string
}

// digest is the state a child's digest renders. It is not safe for
// concurrent use (digestReporter locks it).
type digest struct {
	turn    int
	tokens  int
	calls   []digestCall
	folded  int
	text    string
	outcome string
	// oneShot children show their turn's start at once; a background
	// child's first turn starts while its parent's stream goes on.
	oneShot bool
}

// apply folds one event of child into d and reports whether the digest
// changed.
func (d *digest) apply(child *agent.Agent, ev session.Event) bool {
	switch ev.Type {
	case session.TypeTurnStart:
		d.turn++
		if data, err := session.DecodeData[session.TurnData](ev); err == nil && data.Turn > 0 {
			d.turn = data.Turn
		}
		return d.oneShot
	case session.TypeToolCall:
		data, err := session.DecodeData[session.ToolCallData](ev)
		if err != nil {
			return false
		}
		kind, title := describeCall(child, data.Name, json.RawMessage(data.Arguments))
		d.calls = append(d.calls, digestCall{id: data.CallID, kind: kind, title: title, status: "in progress"})
		if over := len(d.calls) - DigestMaxCalls; over > 0 {
			d.calls = append(d.calls[:0:0], d.calls[over:]...)
			d.folded += over
		}
		return true
	case session.TypeToolResult:
		data, err := session.DecodeData[session.ToolResultData](ev)
		if err != nil {
			return false
		}
		id := resultCallID(data.Message)
		for i := range d.calls {
			if d.calls[i].id == id {
				d.calls[i].status = "completed"
				if data.Error != nil {
					d.calls[i].status = "failed"
				}
				return true
			}
		}
		return false
	case session.TypeAssistantMessage:
		data, err := session.DecodeData[session.AssistantMessageData](ev)
		if err != nil {
			return false
		}
		changed := false
		if data.Usage != nil && data.Usage.InputTokens+data.Usage.OutputTokens > 0 {
			d.tokens += data.Usage.InputTokens + data.Usage.OutputTokens
			changed = true
		}
		if line := lastLine(session.JoinText(data.Message.Content, "\n")); line != "" && line != d.text {
			d.text, changed = line, true
		}
		return changed
	}
	return false
}

// resultCallID is the call a tool/result answers.
func resultCallID(m session.Message) string {
	for _, b := range m.Content {
		if b.ToolCallID != "" {
			return b.ToolCallID
		}
	}
	return ""
}

// describeCall names a child's tool call as the editor would: the tool's
// kind and title when it has them, else its name.
func describeCall(child *agent.Agent, name string, args json.RawMessage) (kind, title string) {
	kind, title = "other", name
	if child == nil || child.Tools() == nil {
		return kind, oneLine(title)
	}
	tl, ok := child.Tools().Get(name)
	if !ok {
		return kind, oneLine(title)
	}
	if k, ok := tl.(tool.Kind); ok && k.Kind() != "" {
		kind = k.Kind()
	}
	if t, ok := tl.(interface{ Title(json.RawMessage) string }); ok {
		if s := t.Title(args); s != "" {
			return kind, oneLine(s)
		}
	}
	if lc, ok := tl.(tool.Locator); ok {
		if locs := lc.Locations(args); len(locs) > 0 && locs[0].Path != "" {
			title += " " + locs[0].Path
		}
	}
	return kind, oneLine(title)
}

// render writes the digest, folding the oldest calls into the count until
// it fits DigestMaxBytes.
func (d *digest) render() string {
	calls, folded := d.calls, d.folded
	for {
		s := d.renderWith(calls, folded)
		if len(s) <= DigestMaxBytes {
			return s
		}
		if len(calls) == 0 {
			return cutBytes(s, DigestMaxBytes)
		}
		calls, folded = calls[1:], folded+1
	}
}

func (d *digest) renderWith(calls []digestCall, folded int) string {
	var b strings.Builder
	if d.turn > 0 {
		fmt.Fprintf(&b, "turn %d", d.turn)
	} else {
		b.WriteString("starting")
	}
	if d.tokens > 0 {
		fmt.Fprintf(&b, " · %s tokens", groupDigits(d.tokens))
	}
	switch folded {
	case 0:
	case 1:
		b.WriteString("\n… 1 earlier call")
	default:
		fmt.Fprintf(&b, "\n… %d earlier calls", folded)
	}
	for _, c := range calls {
		fmt.Fprintf(&b, "\n%s · %s · %s", c.kind, c.title, c.status)
	}
	if d.text != "" {
		b.WriteString("\n> " + d.text)
	}
	if d.outcome != "" {
		b.WriteString("\n" + d.outcome)
	}
	return b.String()
}

// settle records the child's outcome (and its worktree's fate) and
// returns the final digest.
func (d *digest) settle(stop string, wt *WorktreeOutcome) string {
	d.outcome = "outcome: " + outcomeWord(stop)
	if wt != nil {
		d.outcome += "\n" + worktreeLine(wt)
	}
	return d.render()
}

func outcomeWord(stop string) string {
	switch stop {
	case driver.StopCompleted:
		return "completed"
	case driver.StopAborted:
		return "cancelled"
	case driver.StopError:
		return "failed"
	case driver.StopMaxTokens:
		return "out of tokens"
	case driver.StopMaxTurns:
		return "reached its turn limit"
	case driver.StopBudget:
		return "reached its budget"
	case driver.StopTimeout:
		return "ran out of time"
	case driver.StopRefusal:
		return "declined"
	}
	return stop
}

// worktreeLine says where a child's worktree is, relative to its
// repository (the absolute path is in the settlement notice).
func worktreeLine(o *WorktreeOutcome) string {
	path := o.Path
	if rel, err := filepath.Rel(o.Repo, o.Path); err == nil && !strings.HasPrefix(rel, "..") {
		path = filepath.ToSlash(rel)
	}
	switch {
	case o.Err != nil:
		return fmt.Sprintf("worktree kept at %s\non branch %s (git could not tell whether it changed)", path, o.Branch)
	case !o.Kept:
		return "worktree removed (no changes)"
	}
	if o.Commit != "" {
		return fmt.Sprintf("worktree kept at %s\non branch %s (commit %s): %s", path, o.Branch, shortHash(o.Commit), changeSummary(o.Changes))
	}
	return fmt.Sprintf("worktree kept at %s\non branch %s: %s", path, o.Branch, changeSummary(o.Changes))
}

// lastLine is the last non-empty line of s, bounded.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return oneLine(l)
		}
	}
	return ""
}

// oneLine keeps s on one bounded line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > digestLineRunes {
		r := []rune(s)
		s = string(r[:digestLineRunes-1]) + "…"
	}
	return s
}

// cutBytes cuts s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// groupDigits writes n with thousands separators (12,345).
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// digestReporter sends a child's digest through its delegation's progress:
// each change marks it dirty, and the ticker goroutine it owns sends the
// latest state at most once per period. finish stops that goroutine, waits
// for it and returns the final digest.
type digestReporter struct {
	opts DigestOptions
	meta map[string]any

	mu       sync.Mutex
	d        digest
	dirty    bool
	report   func(tool.Progress)
	finished bool
	// sent records that a state was sent.
	sent bool
	// holding keeps the final digest until setReport (a background
	// child can settle before its delegation call has returned, and the
	// call's own progress must not get it, out of order, after that).
	holding bool
	pending *tool.Progress

	quit chan struct{}
	done chan struct{}
}

// newDigestReporter starts a reporter whose updates carry the child link
// meta and go to report (nil: kept until setReport).
func newDigestReporter(opts DigestOptions, oneShot bool, meta map[string]any, report func(tool.Progress)) *digestReporter {
	r := &digestReporter{opts: opts, meta: meta, report: report, d: digest{oneShot: oneShot}}
	if opts.Sync {
		return r
	}
	r.quit, r.done = make(chan struct{}), make(chan struct{})
	ticks, stop := opts.ticker()
	go func() {
		defer close(r.done)
		defer stop()
		for {
			select {
			case <-r.quit:
				return
			case <-ticks:
				r.flush()
			}
		}
	}()
	return r
}

// observe folds one update of the child in. It runs under the child's
// append lock: it only updates state, except in Sync mode.
func (r *digestReporter) observe(child *agent.Agent, u agent.Update) {
	if u.Event == nil {
		return
	}
	r.mu.Lock()
	if r.finished || !r.d.apply(child, *u.Event) {
		r.mu.Unlock()
		return
	}
	r.dirty = true
	// A one-shot child's first state goes at once (the editor learns the
	// link to the child as it starts), and in Sync mode every state does.
	now := r.d.oneShot && (r.opts.Sync || !r.sent)
	r.mu.Unlock()
	if now {
		r.flush()
	}
}

// setLink sets the child link meta and where updates go (a one-shot
// child's id is known from its first update).
func (r *digestReporter) setLink(meta map[string]any, report func(tool.Progress)) {
	r.mu.Lock()
	r.meta, r.report = meta, report
	r.mu.Unlock()
}

// setReport changes where updates go (a background child's delegation
// call has returned: its later updates go through the caller).
func (r *digestReporter) setReport(report func(tool.Progress)) {
	r.mu.Lock()
	r.report, r.holding = report, false
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	if pending != nil && report != nil {
		report(*pending)
	}
}

// holdFinal keeps the final digest until setReport names where it goes.
func (r *digestReporter) holdFinal() {
	r.mu.Lock()
	r.holding = true
	r.mu.Unlock()
}

// flush sends the current digest when it changed since the last one.
func (r *digestReporter) flush() {
	r.mu.Lock()
	if !r.dirty || r.report == nil || r.finished {
		r.mu.Unlock()
		return
	}
	r.dirty, r.sent = false, true
	p := tool.Progress{Text: r.d.render(), Meta: r.meta}
	report := r.report
	// Sent under the lock so two flushes never reorder their states.
	report(p)
	r.mu.Unlock()
}

// stop ends the ticker goroutine and waits for it; later changes are
// ignored.
func (r *digestReporter) stop() {
	r.mu.Lock()
	already := r.finished
	r.finished = true
	r.mu.Unlock()
	if already || r.quit == nil {
		return
	}
	close(r.quit)
	<-r.done
}

// finish stops the reporter and returns the final digest with the child's
// outcome.
func (r *digestReporter) finish(stop string, wt *WorktreeOutcome) string {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.d.settle(stop, wt)
}

// textHandedOver ends the digest of a call whose child a later message
// took over (digestReporter.handover).
const textHandedOver = "continued: a later message to this subagent shows its work from there"

// handover closes this call's digest when a later send_message to the
// still-resident child takes the child's digest over: the call keeps its
// last state, with a line saying where the work goes on (unless Sync: it
// never showed intermediate states).
func (r *digestReporter) handover() {
	r.stop()
	r.mu.Lock()
	r.d.outcome = textHandedOver
	text, report := r.d.render(), r.report
	r.mu.Unlock()
	if r.opts.Sync || report == nil {
		return
	}
	report(tool.Progress{Text: text, Meta: r.meta, Status: "completed"})
}

// sendFinal sends the final digest with a closing status (unless Sync:
// the settlement notice carries it then, at a point of the parent's
// stream that does not depend on scheduling).
func (r *digestReporter) sendFinal(text, stop string) {
	if r.opts.Sync {
		return
	}
	status := "completed"
	if stop != driver.StopCompleted {
		status = "failed"
	}
	p := tool.Progress{Text: text, Meta: r.meta, Status: status}
	r.mu.Lock()
	report := r.report
	if r.holding {
		r.pending, report = &p, nil
	}
	r.mu.Unlock()
	if report == nil {
		return
	}
	report(p)
}
