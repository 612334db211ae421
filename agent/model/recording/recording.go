package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/scripted"
	"github.com/acp-agent/acp-agent/agent/session"

	"github.com/acp-agent/acp-agent/internal/beneath"
)

// Default snapshot caps.
const (
	DefaultMaxFileBytes  = 256 << 10
	DefaultMaxTotalBytes = 4 << 20
)

// Options configure a Recorder.
type Options struct {
	// Cwd is the session's working directory: tool-call paths resolve
	// against it, and only files inside it are snapshotted.
	Cwd string
	// Secrets are values that must never reach the files (API keys,
	// values of variables named like secrets); each is replaced by
	// Redacted wherever it occurs.
	Secrets []string
	// MaxFileBytes caps one snapshotted file (larger ones are left out
	// and reported); 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxTotalBytes caps the snapshot (files past it are left out and
	// reported); 0 means DefaultMaxTotalBytes.
	MaxTotalBytes int64
	// Keep, when set, says whether the calls of a session are recorded
	// (a served connection records one session tree); nil keeps all.
	Keep func(sessionID string) bool
	// Denied, when set, reports whether the settings' deny rules forbid
	// reading the file rel (relative to Cwd, slash-separated): such a
	// file is never copied (SetDenied sets it once the rules are known).
	Denied func(rel string) bool
}

// Recorder keeps the replies of the calls through the models it wraps
// and the files their tool calls name.
type Recorder struct {
	opts Options
	red  *Redactor

	mu        sync.Mutex
	replies   map[string]map[int]scripted.Reply
	conflicts []string
	keys      map[string]string // script key by session id
	seen      map[string]bool   // workspace paths considered (relative, slash-separated)
	files     map[string]string // snapshotted contents by relative path
	total     int64
	notes     []string
	// commandNoted: the note that commands' files are unknown was made.
	commandNoted bool
	// cut counts the calls cancelled after they streamed something.
	cut int
	// estimates are the token estimates automatic compaction decisions
	// used, by script key and call.
	estimates map[string]map[int]int
	// entered is the last call index each session entered (its own
	// calls, not compaction summaries); open counts its calls in flight.
	entered map[string]int
	open    map[string]int
}

// New returns a recorder.
func New(o Options) *Recorder {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	return &Recorder{
		opts: o, red: NewRedactor(o.Secrets...),
		replies: map[string]map[int]scripted.Reply{}, keys: map[string]string{}, seen: map[string]bool{}, files: map[string]string{},
		entered: map[string]int{}, open: map[string]int{}, estimates: map[string]map[int]int{},
	}
}

// Estimate notes the token estimate an automatic compaction decision of
// model call c used and returns it unchanged (agent.Options.EstimateTokens):
// the replay decides on the same figure.
func (r *Recorder) Estimate(c model.Caller, estimate int) int {
	if r.opts.Keep != nil && !r.opts.Keep(c.SessionID) {
		return estimate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	byCall := r.estimates[c.ScriptKey]
	if byCall == nil {
		byCall = map[int]int{}
		r.estimates[c.ScriptKey] = byCall
	}
	if _, ok := byCall[c.Call]; !ok {
		byCall[c.Call] = estimate // the first decision of a step (a retry after an overflow decides again)
	}
	return estimate
}

// Estimates returns the noted token estimates by script key and call.
func (r *Recorder) Estimates() map[string]map[int]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]map[int]int, len(r.estimates))
	for k, byCall := range r.estimates {
		out[k] = maps.Clone(byCall)
	}
	return out
}

// Wrap returns m with every call's reply recorded. Chunks and errors pass
// through unchanged.
func (r *Recorder) Wrap(m model.Model) model.Model { return recorded{inner: m, r: r} }

type recorded struct {
	inner model.Model
	r     *Recorder
}

// AcceptsImages forwards the wrapped model's capability.
func (m recorded) AcceptsImages() bool { return model.AcceptsImages(m.inner) }

// SwitchesThinking forwards the wrapped model's capability.
func (m recorded) SwitchesThinking() bool { return model.SwitchesThinking(m.inner) }

func (m recorded) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		var acc accumulator
		m.r.enter(req.Caller)
		defer func() {
			m.r.leave(req.Caller)
			if acc.cancelled && acc.Chunks() > 0 {
				m.r.noteCut(req.Caller)
			}
			m.r.store(req.Caller, acc.reply())
		}()
		for c, err := range m.inner.Stream(ctx, req) {
			if err != nil {
				acc.fail(ctx, err)
				yield(c, err)
				return
			}
			acc.Add(c)
			if !yield(c, nil) {
				return
			}
		}
	}
}

// accumulator assembles one call's reply from its chunks
// (model.Accumulator, as the agent loop does) and how the call failed.
type accumulator struct {
	model.Accumulator
	err       error
	cancelled bool
}

// fail notes how the call failed: a cancelled call (the turn was
// cancelled, or the process shut down) replays as a call that waits for
// its cancellation.
func (a *accumulator) fail(ctx context.Context, err error) {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		a.cancelled = true
		return
	}
	a.err = err
}

func (a *accumulator) reply() scripted.Reply {
	rep := scripted.Reply{Text: a.Text(), Reasoning: a.ReasoningText()}
	for _, c := range a.Calls() {
		rep.ToolCalls = append(rep.ToolCalls, scripted.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments()})
	}
	if u := a.Usage(); u != nil {
		rep.Usage = &scripted.Usage{Input: u.InputTokens, Output: u.OutputTokens}
	}
	if f := a.Finish(); f != "" && f != a.ImpliedFinish() {
		rep.Finish = f
	}
	switch {
	case a.cancelled:
		// What it streamed before the cancel is left out: a replay
		// cancels the call once it was entered, and a hang that streams
		// nothing is cancelled at the same point on every replay (one
		// that streams text races the cancel).
		rep = scripted.Reply{Hang: true}
	case a.err != nil:
		rep.Error = a.err.Error()
		rep.ErrorAfterChunks = a.Chunks() > 0
		rep.ContextLengthExceeded = errors.Is(a.err, model.ErrContextLength)
		rep.StreamBroken = !rep.ContextLengthExceeded && errors.Is(a.err, model.ErrStreamBroken)
	}
	return rep
}

// noteCut notes a call cancelled after it streamed part of its reply: it
// counts as a reply (Produced), and the recording says its partial
// output is left out.
func (r *Recorder) noteCut(c model.Caller) {
	if r.opts.Keep != nil && !r.opts.Keep(c.SessionID) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut++
	r.notes = append(r.notes, fmt.Sprintf("script key %q call %d was cancelled while it answered: recorded as hang: true without what it streamed (the replay cancels it before it streams)", c.ScriptKey, c.Call))
}

// enter and leave track the calls each session has in flight.
func (r *Recorder) enter(c model.Caller) {
	if strings.HasSuffix(c.ScriptKey, compactSuffix) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entered[c.SessionID] = c.Call
	r.open[c.SessionID]++
}

func (r *Recorder) leave(c model.Caller) {
	if strings.HasSuffix(c.ScriptKey, compactSuffix) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open[c.SessionID]--
}

// InFlight returns the index of the call session id has in flight (its
// own, not a compaction summary), if it has one.
func (r *Recorder) InFlight(id string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entered[id], r.open[id] > 0
}

// LastCall returns the index of the last call session id entered (its
// own, not a compaction summary), if it entered one.
func (r *Recorder) LastCall(id string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.entered[id]
	return c, ok
}

// SetCwd sets the working directory of the recorded session when it was
// not known at New (a served connection learns it from session/new).
func (r *Recorder) SetCwd(cwd string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Cwd = cwd
}

// store keeps rep as the reply of c, redacted. Files are not snapshotted
// here: a reply only names them; Touched snapshots a file once a tool,
// allowed by the gate, is about to read or change it.
func (r *Recorder) store(c model.Caller, rep scripted.Reply) {
	if r.opts.Keep != nil && !r.opts.Keep(c.SessionID) {
		return
	}
	rep = r.redactReply(rep)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[c.SessionID]; !ok && c.SessionID != "" && !strings.HasSuffix(c.ScriptKey, compactSuffix) {
		r.keys[c.SessionID] = c.ScriptKey
	}
	byCall := r.replies[c.ScriptKey]
	if byCall == nil {
		byCall = map[int]scripted.Reply{}
		r.replies[c.ScriptKey] = byCall
	}
	if prev, ok := byCall[c.Call]; ok {
		// Two sessions with one script key (two children with the same
		// description): the scripted model gives both the same reply.
		if !sameReply(prev, rep) {
			r.conflicts = append(r.conflicts, fmt.Sprintf("script key %q call %d was answered twice, differently (two sessions with the same key); the first reply is kept", c.ScriptKey, c.Call))
		}
		return
	}
	byCall[c.Call] = rep
	for _, tc := range rep.ToolCalls {
		if tc.Name == "bash" && !r.commandNoted {
			r.commandNoted = true
			r.notes = append(r.notes, "the session ran commands (bash): files they read are not known to the recording; add them under files: in scenario.yaml if the replay needs them")
		}
	}
}

func sameReply(a, b scripted.Reply) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func (r *Recorder) redactReply(rep scripted.Reply) scripted.Reply {
	rep.Text = r.red.Redact(rep.Text)
	rep.Reasoning = r.red.Redact(rep.Reasoning)
	rep.Error = r.red.Redact(rep.Error)
	calls := make([]scripted.ToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		calls[i] = scripted.ToolCall{ID: r.red.Redact(c.ID), Name: c.Name, Arguments: r.red.Redact(c.Arguments)}
	}
	if len(calls) > 0 {
		rep.ToolCalls = calls
	}
	return rep
}

// Touched snapshots the file a tool of session sessionID is about to
// read or change, the gate having allowed it: abs is the path the call
// resolved to (symlinks evaluated). Only the first touch of a path counts:
// a later call sees what an earlier one may have changed, and the replay
// starts from the state before the first. A path outside the working
// directory is never copied (noted); a secret-looking file or one the
// deny rules cover gets a placeholder (noted).
func (r *Recorder) Touched(sessionID, abs string) {
	if r.opts.Keep != nil && !r.opts.Keep(sessionID) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Cwd == "" || abs == "" {
		return
	}
	rel, ok := inside(realPath(r.opts.Cwd), abs)
	if !ok {
		rel, ok = inside(r.opts.Cwd, abs)
	}
	if !ok {
		if !r.seen[abs] {
			r.seen[abs] = true
			r.notes = append(r.notes, fmt.Sprintf("%s: outside the working directory, not snapshotted", r.red.Redact(abs)))
		}
		return
	}
	if r.seen[rel] {
		return
	}
	r.seen[rel] = true
	r.addFileLocked(rel)
}

// Outside notes that a tool touched path, which lies outside the working
// directory once resolved (through a symlinked folder, or a file with
// more than one hard link): it is never copied.
func (r *Recorder) Outside(sessionID, path string) {
	if r.opts.Keep != nil && !r.opts.Keep(sessionID) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen["\x00"+path] {
		return
	}
	r.seen["\x00"+path] = true
	r.notes = append(r.notes, fmt.Sprintf("%s: resolves outside the working directory (a symlink or a hard link), not snapshotted", r.red.Redact(path)))
}

// SetDenied sets the deny-rule check of Options.Denied (known once the
// recorded session's settings are).
func (r *Recorder) SetDenied(denied func(rel string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Denied = denied
}

// realPath is p with symlinks evaluated (p itself when that fails).
func realPath(p string) string {
	if rp, err := filepath.EvalSymlinks(p); err == nil {
		return rp
	}
	return p
}

// addFileLocked snapshots cwd/rel if it is a regular text file within the
// caps; a missing file is simply not part of the snapshot. It reads
// through the resolver of the agent's own file work (internal/beneath):
// a path that leaves the cwd through a symlinked folder is not copied,
// nor is a file with more than one hard link (another of its names may
// be outside).
func (r *Recorder) addFileLocked(rel string) {
	if why := r.withheldLocked(rel); why != "" {
		if _, err := os.Lstat(filepath.Join(r.opts.Cwd, filepath.FromSlash(rel))); err != nil {
			return // absent: nothing to hold back
		}
		r.files[rel] = Placeholder
		r.notes = append(r.notes, fmt.Sprintf("%s: %s, never copied (the replay gets a placeholder)", rel, why))
		return
	}
	root, err := beneath.Open(filepath.Clean(r.opts.Cwd))
	if err != nil {
		return
	}
	defer root.Close()
	name := filepath.FromSlash(rel)
	st, err := root.Lstat(name)
	if beneath.Leaves(err) {
		r.notes = append(r.notes, rel+": resolves outside the working directory, not snapshotted")
		return
	}
	if err != nil {
		return // absent before the call (write creates it)
	}
	switch {
	case st.Mode().IsRegular() && multiplyLinked(st):
		r.notes = append(r.notes, rel+": a file with more than one hard link (another of its names may be outside the working directory), not snapshotted")
		return
	case !st.Mode().IsRegular():
		r.notes = append(r.notes, rel+": not a regular file, not snapshotted")
		return
	case st.Size() > r.opts.MaxFileBytes:
		r.notes = append(r.notes, fmt.Sprintf("%s: %d bytes, over the %d-byte file cap, not snapshotted", rel, st.Size(), r.opts.MaxFileBytes))
		return
	case r.total+st.Size() > r.opts.MaxTotalBytes:
		r.notes = append(r.notes, fmt.Sprintf("%s: %d bytes, past the %d-byte snapshot cap, not snapshotted", rel, st.Size(), r.opts.MaxTotalBytes))
		return
	}
	data, err := root.ReadFile(name, r.opts.MaxFileBytes)
	if err != nil {
		r.notes = append(r.notes, fmt.Sprintf("%s: %v, not snapshotted", rel, err))
		return
	}
	if !utf8.Valid(data) {
		r.notes = append(r.notes, rel+": not UTF-8 text, not snapshotted")
		return
	}
	content := r.red.Redact(string(data))
	if content != string(data) {
		r.notes = append(r.notes, rel+": secret values redacted in the snapshot")
	}
	r.files[rel] = content
	r.total += int64(len(data))
}

// AddFile snapshots cwd/rel (a relative, slash-separated path) as a tool
// call naming it would, for files that shape a session without being
// read by a tool (agent definitions, project settings).
func (r *Recorder) AddFile(rel string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rel, ok := inside(r.opts.Cwd, rel)
	if !ok {
		return
	}
	if r.seen[rel] {
		return
	}
	r.seen[rel] = true
	r.addFileLocked(rel)
}

// inside returns p relative to cwd, slash-separated, when it lies inside
// cwd.
func inside(cwd, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	rel, err := filepath.Rel(filepath.Clean(cwd), filepath.Clean(p))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// Replies returns the recorded replies by script key, in call order. A
// call index that was never recorded (a step that made no call) holds a
// reply failing with a message saying so.
func (r *Recorder) Replies() map[string][]scripted.Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]scripted.Reply, len(r.replies))
	for key, byCall := range r.replies {
		last := -1
		for i := range byCall {
			last = max(last, i)
		}
		list := make([]scripted.Reply, last+1)
		for i := range list {
			rep, ok := byCall[i]
			if !ok {
				rep = scripted.Reply{Error: fmt.Sprintf("not recorded: session call %d made no model call while recording", i)}
			}
			list[i] = rep
		}
		out[key] = list
	}
	return out
}

// Produced reports whether the run produced a recording: at least one
// model call of a recorded session returned a reply (not only errors or
// calls cancelled before they streamed anything). A run that failed before its first reply (a missing
// or rejected key) must leave an earlier recording alone.
func (r *Recorder) Produced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut > 0 {
		return true // the model answered; the run cut the answer
	}
	for _, byCall := range r.replies {
		for _, rep := range byCall {
			if rep.Error == "" && !rep.Hang {
				return true
			}
		}
	}
	return false
}

// compactSuffix ends the script key of compaction summaries
// (agent.CompactScriptSuffix).
const compactSuffix = "/compact"

// KeyOf returns the script key of session id's model calls ("" when it
// made none).
func (r *Recorder) KeyOf(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[id]
}

// Files returns the snapshotted files by relative path.
func (r *Recorder) Files() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.files))
	for k, v := range r.files {
		out[k] = v
	}
	return out
}

// Notes returns what the recording left out or changed (capped files,
// redactions, conflicting replies), sorted.
func (r *Recorder) Notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append(append([]string(nil), r.notes...), r.conflicts...)
	sort.Strings(out)
	return out
}

// Redact passes s through the recorder's redactor.
func (r *Recorder) Redact(s string) string { return r.red.Redact(s) }

// multiplyLinked reports whether fi is a file with more than one hard
// link.
func multiplyLinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
