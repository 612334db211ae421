package live

// This file defines the recorder of one exec run (acp-agent exec
// --record): the recording model wrapper (agent/model/recording) around
// the composition's model, the session observer, and the scenario
// directory written when the run is over.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/model/recording"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/settings"
)

// knownKeyVars are the providers' key variables, redacted whatever their
// value looks like.
var knownKeyVars = []string{"OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY"}

// linkSuffixes end the names of variables whose long values carry
// credentials though the name does not say so (DATABASE_URL, GH_PAT,
// SENTRY_DSN, SLACK_WEBHOOK).
var linkSuffixes = []string{"_URL", "_PAT", "_DSN", "_WEBHOOK"}

// minLinkValue: a value of a linkSuffixes variable longer than this is
// redacted (shorter ones, "http://x", carry no credential worth hiding
// and would blank out ordinary text).
const minLinkValue = 15

// SecretValues are the values a recording must not contain: the
// provider's key variable, every variable named like a secret (KEY,
// TOKEN, SECRET, PASSWORD: agent/settings), and every value longer than
// 15 characters of a variable whose name ends in _URL, _PAT, _DSN or
// _WEBHOOK, read through getenv.
func SecretValues(apiKeyEnv string, getenv func(string) string, environ []string) []string {
	names := append([]string{apiKeyEnv}, knownKeyVars...)
	var links []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "":
		case settings.Dropped(name, nil, settings.Env{}):
			names = append(names, name)
		case hasLinkSuffix(name):
			links = append(links, name)
		}
	}
	for _, n := range links {
		if v := getenv(n); len(v) > minLinkValue {
			names = append(names, n)
		}
	}
	var out []string
	for _, n := range names {
		if n == "" {
			continue
		}
		if v := getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func hasLinkSuffix(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range linkSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

// Exec is one --record run. Its observer and model wrapper run on the
// agent's goroutines (mu guards what they note); Write runs once, after
// the run is over.
type Exec struct {
	dir string
	rec *recording.Recorder
	cwd string
	// keep, when set, selects the sessions recorded (serving: one tree).
	keep func(sessionID string) bool

	mu      sync.Mutex
	calls   map[string]string      // tool name by session id + call id (searches)
	notices map[string]int         // settlement notices by session id
	turns   map[string]*turnState  // by session id
	after   map[string][]afterTurn // notices that came between turns, by receiving session id
	// steerQ mirrors each session's next-step inbox queue (nil for an
	// item that is not a settlement notice); steered are the notices
	// that queue delivered within a running turn, in claim order.
	steerQ  map[string][]*steeredNotice
	steered []steeredNotice
}

// turnState is whether a session's turn is open, whether it has taken a
// step yet, and the last one ended.
type turnState struct {
	open    bool
	stepped bool
	ended   int
}

// steeredNotice is a settlement notice from sender that reached session
// receiver while a turn was open: delivered with receiver's model call
// call, the receiver having had notices settlement notices by then.
// senderCall is the sender's last model call before it settled.
type steeredNotice struct {
	receiver, sender string
	senderCall       int
	call, notices    int
}

// afterTurn is a settlement notice from sender that reached a session
// with no turn open, after its turn ended ended.
type afterTurn struct {
	sender string
	ended  int
}

// NewExec prepares --record DIR: it refuses a DIR holding anything but
// a directory (an earlier recording is replaced when written). cwd is
// the recorded session's working directory ("" until known: serving).
func NewExec(dir, cwd string) (*Exec, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("--record: %v", err)
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("--record %s: not a directory", abs)
	}
	return &Exec{dir: abs, cwd: cwd, calls: map[string]string{}, notices: map[string]int{}, turns: map[string]*turnState{}, after: map[string][]afterTurn{}, steerQ: map[string][]*steeredNotice{}}, nil
}

// WrapModel starts the recording, redacting secrets, and returns the
// wrapper of the composition's model (after prev, when set): it goes in
// the composition's Config.WrapModel before the composition is built.
func (r *Exec) WrapModel(secrets []string, prev func(model.Model) model.Model) func(model.Model) model.Model {
	r.rec = recording.New(recording.Options{Cwd: r.cwd, Secrets: secrets, Keep: r.keep})
	return func(m model.Model) model.Model {
		if prev != nil {
			m = prev(m)
		}
		return r.rec.Wrap(m)
	}
}

// projectFiles snapshots the files of cwd's .acp-agent directory that
// shape a session without a tool reading them: agent definitions and
// the project settings.
func (r *Exec) projectFiles() {
	root := filepath.Join(r.cwd, ".acp-agent")
	r.rec.AddFile(".acp-agent/settings.json")
	_ = filepath.WalkDir(filepath.Join(root, "agents"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(r.cwd, p); err == nil {
			r.rec.AddFile(filepath.ToSlash(rel))
		}
		return nil
	})
}

// ExecRun is what an exec run leaves to its recording.
type ExecRun struct {
	Prompt string
	// Mode is --mode ("" for the session's default).
	Mode string
	// Answers are the option ids given to permission questions, in order.
	Answers []string
	// SessionID is the session the run created ("" when it failed first).
	SessionID string
	// WaitChildren: the run waited for background subagents to settle.
	WaitChildren bool
	// MCPServers is --mcp-config as loaded (nil: none).
	MCPServers json.RawMessage
	// ContextWindow is the composition's --context-window (0: the table's).
	ContextWindow int
	// Failed: the prompt was answered with an error (a failed turn).
	Failed bool
	// Cancelled: the turn was cancelled (a signal, stdout closed).
	Cancelled bool
	// MaxTurns is --max-turns (0: none).
	MaxTurns int
}

// Write writes the scenario of the run, and reports on stderr what it
// left out.
func (r *Exec) Write(run ExecRun, stderr io.Writer) error {
	if !r.rec.Produced() {
		fmt.Fprintf(stderr, "acp-agent: --record: the run got no model reply: %s not written (a recording already there is left as it was)\n", r.dir)
		return nil
	}
	r.projectFiles()
	s := recording.Session{
		Description:   "Recorded with acp-agent exec --record.",
		Prompt:        run.Prompt,
		Mode:          run.Mode,
		Permissions:   run.Answers,
		ContextWindow: run.ContextWindow,
		PromptFailed:  run.Failed,
		MaxTurns:      run.MaxTurns,
	}
	if run.WaitChildren && run.SessionID != "" {
		s.Settled = r.settlementNotices(run.SessionID)
		s.Fences = r.fences(run.SessionID)
	}
	if run.Cancelled && run.SessionID != "" {
		s.Steps, s.Fences = r.cancelled(run, s)
	}
	var mcpNotes []string
	if run.MCPServers != nil {
		s.MCPServers, mcpNotes = httpMCPNames(run.MCPServers)
	}
	if err := r.rec.Write(r.dir, s); err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	for _, n := range append(mcpNotes, r.rec.Notes()...) {
		fmt.Fprintf(stderr, "acp-agent: --record: %s\n", n)
	}
	if len(s.MCPServers) > 0 {
		fmt.Fprintf(stderr, "acp-agent: --record: the replay serves the demo MCP server (tools echo, add, fail, image, wait) under the names %s: calls to other tools of those servers fail there\n", strings.Join(s.MCPServers, ", "))
	}
	return nil
}

// cancelled returns the steps of a run whose turn was cancelled: the
// prompt is sent in the background and cancelled where the recorded one
// was, then its answer awaited. A cancel that came during a model call
// (recorded as hang: true) is sent once the replay entered that call; one
// that came while tools ran or a question waited is sent at the step
// boundary after them, where a step fence holds the turn until the
// cancel ends it (so the replay's tools finish first).
func (r *Exec) cancelled(run ExecRun, s recording.Session) ([]recording.Step, []recording.Fence) {
	var steps []recording.Step
	if s.Mode != "" {
		steps = append(steps, recording.Step{Op: recording.OpSetMode, Mode: s.Mode})
	}
	steps = append(steps, recording.Step{Op: recording.OpPrompt, Text: s.Prompt, Permissions: s.Permissions, Background: true})
	fences := s.Fences
	if last, ok := r.rec.LastCall(run.SessionID); ok {
		c := last
		if list := r.rec.Replies()["main"]; last < len(list) && !list[last].Hang {
			c = last + 1
			r.mu.Lock()
			turn := r.turn(run.SessionID).ended
			r.mu.Unlock()
			fences = append(fences, recording.Fence{Key: "main", Call: c, AtStep: true, UntilSession: "main", Until: recording.Wait{TurnEnded: max(turn, 1)}})
			steps = append(steps, recording.Step{Op: recording.OpWait, Wait: recording.Wait{StepReached: &c}})
		} else {
			steps = append(steps, recording.Step{Op: recording.OpWait, Wait: recording.Wait{ModelCall: &c}})
		}
	}
	steps = append(steps, recording.Step{Op: recording.OpCancel}, recording.Step{Op: recording.OpAwaitPrompt})
	if s.Settled > 0 {
		steps = append(steps, recording.Step{Op: recording.OpWait, Wait: recording.Wait{ChildSettled: s.Settled, Idle: true}})
	}
	return steps, fences
}

// httpMCPNames returns the names of the HTTP servers of an mcpServers
// array (a replay serves the demo server under each) and a note for
// each other one.
func httpMCPNames(raw json.RawMessage) (names, notes []string) {
	var servers []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &servers) != nil {
		return nil, nil
	}
	for _, sv := range servers {
		if sv.Type == "http" {
			names = append(names, sv.Name)
		} else {
			notes = append(notes, fmt.Sprintf("MCP server %q (%s): a replay serves only HTTP demo servers; its tools are not offered there", sv.Name, cmp.Or(sv.Type, "stdio")))
		}
	}
	return names, notes
}

// Observe counts, from now on, the subagent settlement notices each
// session's log receives (the live sessions are gone once the server
// has shut down). It returns the observer's removal.
func (r *Exec) Observe(sessions *session.Store) func() {
	return sessions.Observe(&session.Observer{Appended: func(s *session.Session, ev session.Event) {
		switch ev.Type {
		case session.TypeToolCall, session.TypeToolResult:
			r.noteSearch(s, ev)
		case session.TypeTurnStart:
			r.mu.Lock()
			ts := r.turn(s.ID())
			ts.open, ts.stepped = true, false
			r.mu.Unlock()
		case session.TypeStepStart:
			r.mu.Lock()
			r.turn(s.ID()).stepped = true
			r.mu.Unlock()
		case session.TypeTurnEnd:
			d, err := session.DecodeData[session.TurnEndData](ev)
			if err != nil {
				return
			}
			r.mu.Lock()
			ts := r.turn(s.ID())
			ts.open, ts.ended = false, d.Turn
			r.mu.Unlock()
		case session.TypeInboxSpliced:
			d, err := session.DecodeData[session.InboxSplicedData](ev)
			if err != nil {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			ts := r.turn(s.ID())
			if d.Target == session.InboxNextStep {
				r.steerSpliceLocked(s.ID(), ts, d)
			}
			for _, m := range d.Inserted {
				if m.Source.Kind != session.SourceSubagentSettled {
					continue
				}
				r.notices[s.ID()]++
				if !ts.open && ts.ended > 0 && m.Source.SenderSessionID != "" {
					r.after[s.ID()] = append(r.after[s.ID()], afterTurn{sender: m.Source.SenderSessionID, ended: ts.ended})
				}
			}
		}
	}})
}

// steerSpliceLocked follows session id's next-step queue: a settlement
// notice steered into it is noted with the sender's last model call; when
// the queue is claimed, each notice in it is placed: claimed before the
// turn's first step (it came as the turn before ended), it is a notice
// between turns; else it was delivered with the receiver's next model
// call, the position the replay pins it to (fences).
func (r *Exec) steerSpliceLocked(id string, ts *turnState, d session.InboxSplicedData) {
	q := r.steerQ[id]
	if d.RemovedCount != nil {
		n := min(max(*d.RemovedCount, 0), max(len(q)-d.Start, 0))
		claimed := append([]*steeredNotice(nil), q[d.Start:d.Start+n]...)
		q = append(q[:d.Start:d.Start], q[d.Start+n:]...)
		if d.Outcome == "" {
			last, ok := r.rec.LastCall(id)
			for _, sn := range claimed {
				switch {
				case sn == nil:
				case !ts.stepped || !ok:
					if ts.ended > 0 {
						r.after[id] = append(r.after[id], afterTurn{sender: sn.sender, ended: ts.ended})
					}
				default:
					sn.call, sn.notices = last+1, r.notices[id]
					r.steered = append(r.steered, *sn)
				}
			}
		}
	}
	for _, m := range d.Inserted {
		var sn *steeredNotice
		if m.Source.Kind == session.SourceSubagentSettled && m.Source.SenderSessionID != "" {
			sn = &steeredNotice{receiver: id, sender: m.Source.SenderSessionID}
			sn.senderCall, _ = r.rec.LastCall(sn.sender)
		}
		q = append(q, sn)
	}
	r.steerQ[id] = q
}

// searchTools list the files they found in their structured output:
// glob every file it matched, grep every file with a match.
var searchTools = map[string]bool{"glob": true, "grep": true}

// noteSearch snapshots the files a glob or grep call of a session working
// in the recorded cwd found, once it returned: on replay the same search
// then finds the same files (a search reads nothing the call's
// arguments name, so the model-boundary recorder cannot see them).
// Commands (bash) read what they like: their files are not known.
func (r *Exec) noteSearch(s *session.Session, ev session.Event) {
	r.mu.Lock()
	cwd := r.cwd
	r.mu.Unlock()
	if cwd == "" || s.Header().Cwd != cwd || r.keep != nil && !r.keep(s.ID()) {
		return
	}
	switch ev.Type {
	case session.TypeToolCall:
		d, err := session.DecodeData[session.ToolCallData](ev)
		if err != nil || !searchTools[d.Name] {
			return
		}
		r.mu.Lock()
		r.calls[s.ID()+"\x00"+d.CallID] = d.Name
		r.mu.Unlock()
	case session.TypeToolResult:
		d, err := session.DecodeData[session.ToolResultData](ev)
		if err != nil {
			return
		}
		var id string
		for _, b := range d.Message.Content {
			if b.Type == session.BlockToolResult {
				id = b.ToolCallID
			}
		}
		key := s.ID() + "\x00" + id
		r.mu.Lock()
		name, ok := r.calls[key]
		delete(r.calls, key)
		r.mu.Unlock()
		if !ok {
			return
		}
		raw, _ := d.Raw.(map[string]any)
		field := map[string]string{"glob": "files", "grep": "paths"}[name]
		paths, _ := raw[field].([]any)
		for _, p := range paths {
			if rel, ok := p.(string); ok && rel != "" {
				r.rec.AddFile(rel)
			}
		}
	}
}

func (r *Exec) turn(id string) *turnState {
	ts := r.turns[id]
	if ts == nil {
		ts = &turnState{}
		r.turns[id] = ts
	}
	return ts
}

// fences hold the first call of each background child whose notice
// reached root between two turns until the turn before it ended, so the
// replay's notice starts a turn of its own too.
func (r *Exec) fences(root string) []recording.Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recording.Fence
	for _, at := range r.after[root] {
		if key := r.rec.KeyOf(at.sender); key != "" {
			out = append(out, recording.Fence{Key: key, Call: 0, TurnEnded: at.ended})
		}
	}
	// A notice steered into a running turn: the sender's last call waits
	// until the receiver reached the step boundary before the call that
	// delivered it, and the receiver waits there for the notice, so the
	// replay delivers it with the same call, at the same place in the log.
	for _, sn := range r.steered {
		sender, receiver := r.rec.KeyOf(sn.sender), r.rec.KeyOf(sn.receiver)
		if sender == "" || receiver == "" || sn.call < 1 {
			continue
		}
		at := sn.call
		out = append(out,
			recording.Fence{Key: sender, Call: sn.senderCall, UntilSession: receiver, Until: recording.Wait{StepReached: &at}},
			recording.Fence{Key: receiver, Call: sn.call, AtStep: true, UntilSession: receiver, Until: recording.Wait{ChildSettled: sn.notices}})
	}
	return out
}

// settlementNotices is the number of settlement notices session id's log
// received during the run.
func (r *Exec) settlementNotices(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notices[id]
}
