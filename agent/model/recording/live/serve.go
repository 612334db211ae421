package live

// This file defines --record DIR when serving: the exec recorder's model
// wrapper and session observer, plus taps on the ACP connection that
// turn what the editor sent into the scenario's client steps. The first
// session the editor creates on the connection (session/new) is the one
// recorded, with its subagents; sessions it loads or creates after it
// are served as usual and left out (each is noted on stderr).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/acp-agent/acp-agent/agent/model/recording"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Serve is one served connection's recording. Its taps run on the
// connection's reader and writer goroutines (smu guards what they note);
// Write runs once, after the server stopped.
type Serve struct {
	*Exec
	// sessions is the composition's live store, set by Attach before the
	// connection is served.
	sessions *session.Store

	smu  sync.Mutex
	caps recording.Client
	// newReqs are the session/new requests not answered yet (by JSON-RPC
	// id), with the MCP servers each named; newSent: the first was seen.
	newReqs map[string][]string
	newSent bool
	root    string
	mcp     []string
	// steps are the client's steps so far; prompts maps the id of a
	// prompt request of the root to its step; permReqs the id of each
	// permission question to the session it asks for.
	steps    []serveStep
	prompts  map[string]int
	permReqs map[string]string
	answered int // prompts of the root answered with a stop reason
	notes    []string
	noted    map[string]bool
}

// serveStep is one client step, or the answer of a prompt (answeredID).
type serveStep struct {
	step       recording.Step
	promptID   string
	answeredID string
	failed     bool // an answer: the prompt was answered with an error
}

// NewServe prepares --record DIR for serving (the working directory is
// the recorded session's, known at its session/new).
func NewServe(dir string) (*Serve, error) {
	er, err := NewExec(dir, "")
	if err != nil {
		return nil, err
	}
	r := &Serve{Exec: er, newReqs: map[string][]string{}, prompts: map[string]int{}, permReqs: map[string]string{}, noted: map[string]bool{}}
	er.keep = r.inTree
	return r, nil
}

// Attach gives the recorder the composition's live sessions (to follow
// the recorded session's tree) once it is built, before it serves.
func (r *Serve) Attach(sessions *session.Store) { r.sessions = sessions }

// inTree reports whether session id is the recorded session or one of
// its descendants.
func (r *Serve) inTree(id string) bool {
	r.smu.Lock()
	root := r.root
	r.smu.Unlock()
	return r.inTreeOf(root, id)
}

// inTreeOf reports whether session id is root or one of its descendants.
func (r *Serve) inTreeOf(root, id string) bool {
	for range 64 { // delegation depth is bounded far below this
		if id == "" || root == "" {
			return false
		}
		if id == root {
			return true
		}
		s, ok := r.sessions.Get(id)
		if !ok {
			return false
		}
		id = s.Header().ParentSession
	}
	return false
}

// TapIn returns in with every line the client sends noted before the
// server reads it.
func (r *Serve) TapIn(in io.Reader) io.Reader {
	return &lineTap{r: in, line: r.fromClient}
}

// TapOut returns out with every line the server writes noted before it
// is written (the client's answer to it cannot come first).
func (r *Serve) TapOut(out io.Writer) io.Writer {
	return &lineTap{w: out, line: r.fromAgent}
}

// lineTap calls line on every complete line read from r or written to w.
// mu orders the writes of concurrent writers with their lines.
type lineTap struct {
	r    io.Reader
	w    io.Writer
	line func([]byte)
	mu   sync.Mutex
	buf  []byte
	// skipping: the line being read grew past maxTapLine; it is dropped
	// up to its newline.
	skipping bool
}

func (t *lineTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.mu.Lock()
	t.feed(p[:n])
	t.mu.Unlock()
	return n, err
}

func (t *lineTap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.feed(p)
	return t.w.Write(p)
}

// maxTapLine bounds the bytes kept of one unfinished line; a longer line
// (a huge image prompt) is skipped rather than held.
const maxTapLine = 64 << 20

func (t *lineTap) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !t.skipping && len(t.buf)+len(p) <= maxTapLine {
				t.buf = append(t.buf, p...)
			} else {
				// Too long to hold: the rest of this line, up to its
				// newline, is skipped too (a tail is not a line).
				t.buf, t.skipping = t.buf[:0], true
			}
			return
		}
		if !t.skipping && len(t.buf)+i <= maxTapLine {
			line := p[:i]
			if len(t.buf) > 0 {
				line = append(t.buf, line...)
			}
			t.line(line)
		}
		t.buf, t.skipping = t.buf[:0], false
		p = p[i+1:]
	}
}

// rpcMessage is a JSON-RPC message of either direction.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m rpcMessage) id() string { return string(bytes.TrimSpace(m.ID)) }

// fromClient notes a request, notification or answer of the client. It
// is long because it is one switch over the ACP methods the recording
// knows, each case a few
// lines under the same lock: kept together so the steps' order is read
// in one place.
func (r *Serve) fromClient(line []byte) {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
		ModeID    string `json:"modeId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
		MCPServers         json.RawMessage `json:"mcpServers"`
		ClientCapabilities struct {
			FS struct {
				Read  bool `json:"readTextFile"`
				Write bool `json:"writeTextFile"`
			} `json:"fs"`
			Terminal bool `json:"terminal"`
			Session  struct {
				Compaction json.RawMessage `json:"compaction"`
			} `json:"session"`
		} `json:"clientCapabilities"`
	}
	if len(m.Params) > 0 {
		_ = json.Unmarshal(m.Params, &p)
	}
	switch m.Method {
	case "":
		r.answer(m)
	case "initialize":
		c := p.ClientCapabilities
		r.caps = recording.Client{FS: c.FS.Read || c.FS.Write, Terminal: c.Terminal, Compaction: len(c.Session.Compaction) > 0 && string(c.Session.Compaction) != "null"}
	case "session/new":
		if r.newSent {
			r.noteLocked("a second session/new: only the first session of the connection is recorded")
			return
		}
		r.newSent = true
		names, notes := httpMCPNames(p.MCPServers)
		for _, n := range notes {
			r.noteLocked(n)
		}
		r.newReqs[m.id()] = names
		r.setCwd(p.Cwd)
	case "session/load", "session/resume", "session/fork":
		r.noteLocked(m.Method + ": a stored session is served but not recorded (record a session created on the connection)")
	case "session/prompt":
		if p.SessionID != r.root || r.root == "" {
			return
		}
		var parts []string
		for _, b := range p.Prompt {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			} else {
				r.noteLocked("a prompt's " + b.Type + " content is not recorded (the scenario's prompts are text)")
			}
		}
		if ended := r.turnsBefore(); ended > r.answered {
			// Turns of its own (a settlement notice's) ran since the
			// last prompt, or one runs or is queued now (the prompt is
			// queued after it): the replay waits for them too.
			r.steps = append(r.steps, serveStep{step: recording.Step{Op: recording.OpWait, Wait: recording.Wait{TurnEnded: ended, Idle: true}}})
			r.answered = ended
		}
		r.prompts[m.id()] = len(r.steps)
		r.steps = append(r.steps, serveStep{step: recording.Step{Op: recording.OpPrompt, Text: strings.Join(parts, "\n")}, promptID: m.id()})
	case "session/cancel":
		if p.SessionID != r.root || r.root == "" {
			if r.inTreeLocked(p.SessionID) {
				r.noteLocked("session/cancel of a subagent is not recorded")
			}
			return
		}
		if call, ok := r.rec.InFlight(r.root); ok {
			// The recorded call is a hang: the replay cancels once it
			// was entered.
			c := call
			r.steps = append(r.steps, serveStep{step: recording.Step{Op: recording.OpWait, Wait: recording.Wait{ModelCall: &c}}})
		}
		r.steps = append(r.steps, serveStep{step: recording.Step{Op: recording.OpCancel}})
	case "session/set_mode":
		if p.SessionID == r.root && r.root != "" {
			r.steps = append(r.steps, serveStep{step: recording.Step{Op: recording.OpSetMode, Mode: p.ModeID}})
		}
	case "session/set_model", "session/set_config_option":
		if p.SessionID == r.root && r.root != "" {
			r.noteLocked(m.Method + ": a model or option change is not recorded (the replay runs one scripted model)")
		}
	}
}

// turnsBefore is the number of the root's turns that end before a prompt
// sent now starts: the ended ones, and one open or about to start (a
// settlement notice that came between turns) when no prompt of the
// root is waiting for it.
func (r *Serve) turnsBefore() int {
	r.Exec.mu.Lock()
	defer r.Exec.mu.Unlock()
	ts := r.turn(r.root)
	pending := ts.open
	for _, at := range r.after[r.root] {
		if at.ended == ts.ended {
			pending = true
		}
	}
	if pending && len(r.prompts) == 0 {
		return ts.ended + 1
	}
	return ts.ended
}

// answer notes the client's answer to a permission question of the
// recorded tree, on the last prompt sent.
func (r *Serve) answer(m rpcMessage) {
	sid, ok := r.permReqs[m.id()]
	if !ok {
		return
	}
	delete(r.permReqs, m.id())
	if !r.inTreeLocked(sid) {
		return
	}
	var res struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if json.Unmarshal(m.Result, &res) != nil {
		return
	}
	opt := res.Outcome.OptionID
	if res.Outcome.Outcome != "selected" || opt == "" {
		opt = "cancelled"
	}
	for i := len(r.steps) - 1; i >= 0; i-- {
		if r.steps[i].promptID != "" {
			r.steps[i].step.Permissions = append(r.steps[i].step.Permissions, opt)
			return
		}
	}
}

// updateMethod marks the agent's session/update notifications, which say
// nothing the recording needs.
var updateMethod = []byte(`"method":"session/update"`)

// fromAgent notes the server's answers (session ids, prompts' ends) and
// permission questions.
func (r *Serve) fromAgent(line []byte) {
	if bytes.Contains(line, updateMethod) {
		return // most lines; a differently spaced one is decoded below
	}
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	switch {
	case m.Method == "session/request_permission":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		r.permReqs[m.id()] = p.SessionID
	case m.Method != "":
	default:
		id := m.id()
		if names, ok := r.newReqs[id]; ok {
			delete(r.newReqs, id)
			var res struct {
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(m.Result, &res) == nil && res.SessionID != "" && r.root == "" {
				r.root, r.mcp = res.SessionID, names
			}
			return
		}
		if i, ok := r.prompts[id]; ok {
			delete(r.prompts, id)
			var res struct {
				StopReason string `json:"stopReason"`
			}
			if json.Unmarshal(m.Result, &res) == nil && res.StopReason != "" {
				r.answered++
			}
			// A prompt answered with an error (a failed turn) replays
			// expecting it.
			failed := len(bytes.TrimSpace(m.Error)) > 0 && string(bytes.TrimSpace(m.Error)) != "null"
			r.steps[i].step.ExpectError = failed
			r.steps = append(r.steps, serveStep{answeredID: r.steps[i].promptID, failed: failed})
		}
	}
}

func (r *Serve) inTreeLocked(id string) bool { return r.inTreeOf(r.root, id) }

func (r *Serve) setCwd(cwd string) {
	r.Exec.mu.Lock()
	r.cwd = cwd
	r.Exec.mu.Unlock()
	r.rec.SetCwd(cwd)
}

func (r *Serve) noteLocked(n string) {
	if !r.noted[n] {
		r.noted[n] = true
		r.notes = append(r.notes, n)
	}
}

// clientSteps turns the noted steps into the scenario's: a prompt
// answered before the client's next step is a plain prompt; one the
// client went on without (it cancelled it, say) is sent in the
// background and awaited where its answer came.
func (r *Serve) clientSteps() []recording.Step {
	var out []recording.Step
	background := map[string]bool{}
	waiting, failed := 0, false
	for i, s := range r.steps {
		switch {
		case s.promptID != "":
			st := s.step
			if i+1 >= len(r.steps) || r.steps[i+1].answeredID != s.promptID {
				st.Background = true
				background[s.promptID] = true
				waiting++
			}
			out = append(out, st)
		case s.answeredID != "":
			if background[s.answeredID] {
				failed = failed || s.failed
				if waiting--; waiting == 0 {
					out = append(out, recording.Step{Op: recording.OpAwaitPrompt, ExpectError: failed})
					failed = false
				}
			}
		default:
			out = append(out, s.step)
		}
	}
	return out
}

// Write writes the scenario of the connection once the server stopped,
// and reports on stderr what it left out; contextWindow is the
// composition's --context-window (0: the table's).
func (r *Serve) Write(stderr io.Writer, contextWindow int) error {
	r.smu.Lock()
	root, steps, mcp, caps := r.root, r.clientSteps(), slices.Clone(r.mcp), r.caps
	notes := slices.Clone(r.notes)
	r.smu.Unlock()
	if root == "" {
		fmt.Fprintf(stderr, "acp-agent: --record: no session was created on the connection: %s not written\n", r.dir)
		return nil
	}
	if !r.rec.Produced() {
		fmt.Fprintf(stderr, "acp-agent: --record: the session got no model reply: %s not written (a recording already there is left as it was)\n", r.dir)
		return nil
	}
	r.projectFiles()
	if n := r.settlementNotices(root); n > 0 {
		steps = append(steps, recording.Step{Op: recording.OpWait, Wait: recording.Wait{ChildSettled: n, Idle: true}})
	}
	s := recording.Session{
		By:            "--record (serving)",
		Description:   "Recorded with acp-agent --record (an editor's session).",
		Steps:         steps,
		Client:        caps,
		MCPServers:    mcp,
		ContextWindow: contextWindow,
		Fences:        r.fences(root),
	}
	if err := r.rec.Write(r.dir, s); err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	for _, n := range append(notes, r.rec.Notes()...) {
		fmt.Fprintf(stderr, "acp-agent: --record: %s\n", n)
	}
	if len(mcp) > 0 {
		fmt.Fprintf(stderr, "acp-agent: --record: the replay serves the demo MCP server (tools echo, add, fail, image, wait) under the names %s: calls to other tools of those servers fail there\n", strings.Join(mcp, ", "))
	}
	return nil
}
