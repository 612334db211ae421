package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/session"
)

// Scenario is one parsed scenario file.
type Scenario struct {
	// Name is the scenario's directory name; File the path used in errors.
	Name, File  string
	Description string
	// Summary is the one line "scenario list" shows.
	Summary string
	// Seed lists the sessions written to the data directory before the
	// agent starts (cold-start cases).
	Seed []SeedSession
	// Faults are injected into the subagent driver.
	Faults Faults
	// Fences hold a session's model call until a condition holds, so
	// concurrent sessions interleave the same way on every run.
	Fences []Fence
	// Model is the scripted model's section, re-encoded as a standalone YAML
	// document with the single top-level key "model". Nil when absent.
	Model []byte
	// Models, when two or more, name the models the agent offers in its
	// model picker (models.go): each runs the same script and its route is
	// script/NAME; the first is the default.
	Models []string
	// ContextWindow is the model's context window in tokens
	// (--context-window), so usage_update and automatic compaction run
	// against a known size; 0 leaves the scripted model without one.
	ContextWindow int
	// MaxTurns is the model requests a turn may make (exec --max-turns);
	// 0: the default.
	MaxTurns int
	// TokenEstimates are a recorded run's token estimates of its automatic
	// compaction decisions, by script key and model call: the replay
	// decides on them instead of its own (agent.Options.EstimateTokens).
	TokenEstimates map[string]map[int]int
	// Steps are the client's actions, run strictly in order.
	Steps []Step
	// Client is what the scenario client advertises and serves (fs,
	// terminal); Files are written into the cwd before the run
	// (workspace.go).
	Client ClientCaps
	Files  []WorkspaceFile
	// MCPServers are HTTP MCP servers the runner serves on loopback and
	// names in every session/new and session/load (mcp.go).
	MCPServers []MCPServer
	// Sandbox, when set, runs local commands in the sandbox (sandbox.go).
	Sandbox *SandboxSpec
	// Git makes the cwd a git repository holding Files in one commit, with
	// a pinned identity and date (so its hash is the same on every run).
	Git bool
	// ExternalAgents puts the acp-agent binary on the PATH of the run as
	// "acp-agent" (SetAgentBinary), with ACP_AGENT_DETERMINISTIC=1 and
	// XDG_STATE_HOME under the run's root, so an agent definition can run
	// acp-agent itself as an external agent.
	ExternalAgents bool
}

// SeedSession is a session persisted before the run.
type SeedSession struct {
	Line   int
	Header session.Header
	Events []session.Event
}

// Faults injected into the in-process subagent driver (empty = none).
type Faults struct {
	// ChildPublishedRunError makes every published child's run fail with
	// this message.
	ChildPublishedRunError string
	// ChildDisposeError makes every child's disposal fail with this message
	// (after disposing for real).
	ChildDisposeError string
}

// Step operations.
const (
	OpInitialize   = "initialize"
	OpNewSession   = "new_session"
	OpLoadSession  = "load_session"
	OpPrompt       = "prompt"
	OpAwaitPrompt  = "await_prompt"
	OpCancel       = "cancel"
	OpWait         = "wait"
	OpRestart      = "restart"
	OpListAgentsEx = "list_agents_via_ext"
	// OpWriteFile writes a file into $CWD between steps (an agent
	// definition changed while the agent was stopped, say).
	OpWriteFile = "write_file"
)

// Step is one client action.
type Step struct {
	// Index is 1-based; Line is the step's line in the file.
	Index, Line int
	Op          string
	// Session is the session reference the step addresses: a name given to
	// new_session with "as" ("main" by default), a seeded session id, or a
	// child's delegation label.
	Session string
	// As names the session created by new_session.
	As string
	// Text is the prompt text.
	Text string
	// Background sends a prompt without waiting for its response (collect it
	// with await_prompt).
	Background bool
	// ExpectError: the prompt (prompt, await_prompt) is answered with a
	// JSON-RPC error, as the recorded one was (a failed turn): the step
	// shows the error instead of failing, and fails if it is answered
	// with a stop reason.
	ExpectError bool
	// Scope of list_agents_via_ext: "children" or "descendants".
	Scope string
	// Wait is set for OpWait.
	Wait *Wait
	// Mode is the mode set by OpSetMode.
	Mode string
	// Model is the model name chosen by OpSetModel.
	Model string
	// Permissions are the answers to the permission requests that come
	// after this prompt step is sent, in order (workspace.go).
	Permissions []string
	// Path (relative to $CWD) and Content of OpWriteFile.
	Path, Content string
	// Dirs are new_session's additional directories: names of directories
	// the runner makes beside the cwd, as $CWD-<name> (protocol2026.go).
	Dirs []string
	// Answers are the answers to the elicitation/create questions that
	// come after this prompt step is sent, in order: "decline", "cancel",
	// or the text accepted as the answer.
	Answers []string
}

// Wait is a barrier observed on the in-process runtime. Every set
// condition must hold at once.
type Wait struct {
	// ChildSettled: at least this many settlement notices reached the
	// session's log (Session, default "main").
	ChildSettled int
	// Idle: the session has no open turn, no unclaimed inbox item and no
	// unanswered prompt, and its live agent (if any) reports idle.
	Idle bool
	// TurnStarted / TurnEnded: the session's log has turn/start or turn/end
	// of that turn number.
	TurnStarted, TurnEnded int
	// ModelCall, when not nil, waits until the session's model call number
	// *ModelCall (0-based, as model.Caller.Call counts) has been entered.
	ModelCall *int
	// StepReached, when not nil, waits until the session reached the step
	// boundary before its model call *StepReached (where it takes the
	// steering messages waiting; agent.Options.StepGate).
	StepReached *int
	// Queued: at least this many of the session's background starts have
	// waited for a slot (the subagent runtime's queue).
	Queued int
}

// Fence holds model call number Call (0-based) of the sessions whose
// script key is Key until Until holds for the session Until names.
type Fence struct {
	Line  int
	Key   string
	Call  int
	Until Wait
	// UntilSession is the session reference Until is checked on.
	UntilSession string
	// AtStep (at: step) holds the step boundary before model call Call
	// instead of the call itself: the moment the turn takes the steering
	// messages waiting (or, after a step that would end it, looks for
	// them). A settlement notice steered into a running turn is pinned
	// this way to the call that delivered it.
	AtStep bool
}

// ParseError is a malformed scenario file. Where names the offending part
// ("step 3 (prompt)", "seed[0].events[2]").
type ParseError struct {
	File  string
	Line  int
	Where string
	Msg   string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Where != "" {
		b.WriteString(e.Where + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// StepError is a failure while running a step.
type StepError struct {
	File string
	Step Step
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s:%d: step %d (%s): %v", e.File, e.Step.Line, e.Step.Index, e.Step.Op, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

type parser struct{ file string }

func (p parser) errf(n *yaml.Node, where, format string, args ...any) *ParseError {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ParseError{File: p.file, Line: line, Where: where, Msg: fmt.Sprintf(format, args...)}
}

// Parse decodes a scenario file. file is used in error messages and name
// becomes Scenario.Name.
func Parse(file, name string, data []byte) (*Scenario, error) {
	p := parser{file: file}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, &ParseError{File: file, Msg: "not valid YAML: " + err.Error()}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(&extra, "", "more than one YAML document")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, p.errf(&doc, "", "the scenario must be a YAML mapping")
	}
	sc := &Scenario{Name: name, File: file}
	root := doc.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, p.errf(k, "", "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "description":
			sc.Description, err = p.str(v, "description")
		case "summary":
			sc.Summary, err = p.str(v, "summary")
		case "seed":
			sc.Seed, err = p.seed(v)
		case "faults":
			sc.Faults, err = p.faults(v)
		case "model":
			sc.Model, err = p.model(k, v)
		case "models":
			sc.Models, err = p.models(v)
		case "context_window":
			if v.Kind != yaml.ScalarNode || v.Decode(&sc.ContextWindow) != nil || sc.ContextWindow <= 0 {
				err = p.errf(v, "", "context_window must be a positive number of tokens")
			}
		case "max_turns":
			if v.Kind != yaml.ScalarNode || v.Decode(&sc.MaxTurns) != nil || sc.MaxTurns <= 0 {
				err = p.errf(v, "", "max_turns must be a positive number of model requests")
			}
		case "token_estimates":
			if v.Decode(&sc.TokenEstimates) != nil {
				err = p.errf(v, "", "token_estimates must map script keys to {call: estimate}")
			}
		case "fences":
			sc.Fences, err = p.fences(v)
		case "steps":
			sc.Steps, err = p.steps(v)
		case "client":
			sc.Client, err = p.client(v)
		case "files":
			sc.Files, err = p.files(v)
		case "mcp_servers":
			sc.MCPServers, err = p.mcpServers(v)
		case "sandbox":
			sc.Sandbox, err = p.sandbox(v)
		case "git":
			sc.Git, err = p.boolean(v, "git")
		case "external_agents":
			sc.ExternalAgents, err = p.boolean(v, "external_agents")
		default:
			err = p.errf(k, "", "unknown key %q (want summary, description, seed, faults, fences, model, models, context_window, max_turns, token_estimates, mcp_servers, steps, client, files, sandbox, git, external_agents)", k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(sc.Steps) == 0 {
		return nil, p.errf(root, "", "the scenario has no steps")
	}
	return sc, nil
}

func (p parser) str(n *yaml.Node, where string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, where, "must be a string")
	}
	return n.Value, nil
}

func (p parser) integer(n *yaml.Node, where string) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, p.errf(n, where, "must be an integer")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || v < 0 {
		return 0, p.errf(n, where, "must be a non-negative integer")
	}
	return v, nil
}

func (p parser) boolean(n *yaml.Node, where string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, p.errf(n, where, "must be true or false")
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, p.errf(n, where, "must be true or false")
	}
	return b, nil
}

// fields walks a mapping node, rejecting duplicates and keys outside allowed.
func (p parser) fields(n *yaml.Node, where string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, where, "must be a mapping")
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, dup := out[k.Value]; dup {
			return nil, p.errf(k, where, "duplicate key %q", k.Value)
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k.Value
		}
		if !ok {
			return nil, p.errf(k, where, "unknown key %q (want %s)", k.Value, strings.Join(allowed, ", "))
		}
		out[k.Value] = n.Content[i+1]
	}
	return out, nil
}

func (p parser) faults(n *yaml.Node) (Faults, error) {
	f, err := p.fields(n, "faults", "child_published_run_error", "child_dispose_error")
	if err != nil {
		return Faults{}, err
	}
	var out Faults
	if v, ok := f["child_published_run_error"]; ok {
		if out.ChildPublishedRunError, err = p.str(v, "faults.child_published_run_error"); err != nil {
			return Faults{}, err
		}
	}
	if v, ok := f["child_dispose_error"]; ok {
		if out.ChildDisposeError, err = p.str(v, "faults.child_dispose_error"); err != nil {
			return Faults{}, err
		}
	}
	return out, nil
}

func (p parser) model(k, v *yaml.Node) ([]byte, error) {
	if v.Kind != yaml.MappingNode && v.Kind != yaml.SequenceNode {
		return nil, p.errf(v, "model", "must be a mapping of scripts per session")
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, p.errf(v, "model", "cannot re-encode: %v", err)
	}
	return out, nil
}

func (p parser) fences(n *yaml.Node) ([]Fence, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "fences", "must be a list")
	}
	var out []Fence
	for i, item := range n.Content {
		where := fmt.Sprintf("fences[%d]", i)
		f, err := p.fields(item, where, "session", "call", "until", "at")
		if err != nil {
			return nil, err
		}
		fe := Fence{Line: item.Line}
		if v, ok := f["session"]; ok {
			if fe.Key, err = p.str(v, where+".session"); err != nil {
				return nil, err
			}
		}
		if fe.Key == "" {
			return nil, p.errf(item, where, "needs the script key (session) of the held call")
		}
		if v, ok := f["call"]; ok {
			if fe.Call, err = p.integer(v, where+".call"); err != nil {
				return nil, err
			}
		}
		if v, ok := f["at"]; ok {
			at, err := p.str(v, where+".at")
			if err != nil {
				return nil, err
			}
			switch at {
			case "step":
				fe.AtStep = true
			case "model_call":
			default:
				return nil, p.errf(v, where+".at", "unknown %q (want model_call or step)", at)
			}
		}
		u, ok := f["until"]
		if !ok {
			return nil, p.errf(item, where, "needs an until condition")
		}
		ref, w, err := p.wait(u, where+".until")
		if err != nil {
			return nil, err
		}
		fe.Until, fe.UntilSession = *w, ref
		out = append(out, fe)
	}
	return out, nil
}

// wait decodes a wait condition mapping (shared by wait steps and fences).
func (p parser) wait(n *yaml.Node, where string) (string, *Wait, error) {
	f, err := p.fields(n, where, "session", "child_settled", "idle", "parent_idle", "turn_started", "turn_ended", "model_call", "step_reached", "queued")
	if err != nil {
		return "", nil, err
	}
	ref := MainRef
	w := &Wait{}
	for key, v := range f {
		wk := where + "." + key
		switch key {
		case "session":
			ref, err = p.str(v, wk)
		case "child_settled":
			w.ChildSettled, err = p.integer(v, wk)
		case "idle", "parent_idle":
			var b bool
			b, err = p.boolean(v, wk)
			w.Idle = w.Idle || b
		case "turn_started":
			w.TurnStarted, err = p.integer(v, wk)
		case "turn_ended":
			w.TurnEnded, err = p.integer(v, wk)
		case "model_call":
			var c int
			c, err = p.integer(v, wk)
			w.ModelCall = &c
		case "step_reached":
			var c int
			c, err = p.integer(v, wk)
			w.StepReached = &c
		case "queued":
			w.Queued, err = p.integer(v, wk)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if w.ChildSettled == 0 && !w.Idle && w.TurnStarted == 0 && w.TurnEnded == 0 && w.ModelCall == nil && w.StepReached == nil && w.Queued == 0 {
		return "", nil, p.errf(n, where, "a wait needs at least one condition (child_settled, idle/parent_idle, turn_started, turn_ended, model_call, step_reached, queued)")
	}
	return ref, w, nil
}

func (p parser) seed(n *yaml.Node) ([]SeedSession, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "seed", "must be a list of sessions")
	}
	var out []SeedSession
	ids := map[string]bool{}
	for i, item := range n.Content {
		where := fmt.Sprintf("seed[%d]", i)
		f, err := p.fields(item, where, "header", "events")
		if err != nil {
			return nil, err
		}
		hn, ok := f["header"]
		if !ok {
			return nil, p.errf(item, where, "missing header")
		}
		h, err := p.header(hn, where+".header")
		if err != nil {
			return nil, err
		}
		if ids[h.ID] {
			return nil, p.errf(hn, where+".header", "session %q is seeded twice", h.ID)
		}
		ids[h.ID] = true
		ss := SeedSession{Line: item.Line, Header: h}
		if en, ok := f["events"]; ok {
			if ss.Events, err = p.events(en, where+".events", h); err != nil {
				return nil, err
			}
		}
		out = append(out, ss)
	}
	return out, nil
}

func (p parser) header(n *yaml.Node, where string) (session.Header, error) {
	f, err := p.fields(n, where, "id", "createdAt", "cwd", "parentSession", "seedLength", "origin", "delegationDepth")
	if err != nil {
		return session.Header{}, err
	}
	var h session.Header
	for key, v := range f {
		w := where + "." + key
		switch key {
		case "id":
			h.ID, err = p.str(v, w)
		case "createdAt":
			var c int
			c, err = p.integer(v, w)
			h.CreatedAt = int64(c)
		case "cwd":
			h.Cwd, err = p.str(v, w)
		case "parentSession":
			h.ParentSession, err = p.str(v, w)
		case "seedLength":
			h.SeedLength, err = p.integer(v, w)
		case "origin":
			h.Origin, err = p.str(v, w)
		case "delegationDepth":
			h.DelegationDepth, err = p.integer(v, w)
		}
		if err != nil {
			return session.Header{}, err
		}
	}
	if _, ok := f["id"]; !ok {
		return session.Header{}, p.errf(n, where, "missing id")
	}
	// The cwd placeholder is an absolute path stand-in; validate with a
	// concrete absolute path substituted.
	check := h
	if check.Cwd == CwdPlaceholder {
		check.Cwd = "/"
	}
	if err := check.Validate(h.ID); err != nil {
		return session.Header{}, p.errf(n, where, "%v", err)
	}
	return h, nil
}

func (p parser) events(n *yaml.Node, where string, h session.Header) ([]session.Event, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, where, "must be a list of events")
	}
	out := make([]session.Event, 0, len(n.Content))
	for i, item := range n.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		f, err := p.fields(item, w, "type", "time", "data", "sourceEventSeqs", "ignorable")
		if err != nil {
			return nil, err
		}
		tn, ok := f["type"]
		if !ok {
			return nil, p.errf(item, w, "missing type")
		}
		ev := session.Event{Seq: int64(i), Time: h.CreatedAt}
		if ev.Type, err = p.str(tn, w+".type"); err != nil {
			return nil, err
		}
		if v, ok := f["time"]; ok {
			t, err := p.integer(v, w+".time")
			if err != nil {
				return nil, err
			}
			ev.Time = int64(t)
		}
		ev.Data = json.RawMessage("{}")
		if v, ok := f["data"]; ok {
			var val any
			if err := v.Decode(&val); err != nil {
				return nil, p.errf(v, w+".data", "%v", err)
			}
			raw, err := json.Marshal(val)
			if err != nil {
				return nil, p.errf(v, w+".data", "not representable as JSON: %v", err)
			}
			ev.Data = raw
		}
		if v, ok := f["sourceEventSeqs"]; ok {
			if v.Kind != yaml.SequenceNode {
				return nil, p.errf(v, w+".sourceEventSeqs", "must be a list of integers")
			}
			for _, s := range v.Content {
				x, err := p.integer(s, w+".sourceEventSeqs")
				if err != nil {
					return nil, err
				}
				ev.SourceEventSeqs = append(ev.SourceEventSeqs, int64(x))
			}
		}
		if v, ok := f["ignorable"]; ok {
			if ev.Ignorable, err = p.boolean(v, w+".ignorable"); err != nil {
				return nil, err
			}
		}
		if session.SurfaceTypes[ev.Type] {
			ev.SurfaceOp = session.AppendOp
		}
		if err := session.ValidateEvent(ev, int64(i)); err != nil {
			return nil, p.errf(item, w, "%v", err)
		}
		out = append(out, ev)
	}
	return out, nil
}

func (p parser) steps(n *yaml.Node) ([]Step, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "steps", "must be a list")
	}
	out := make([]Step, 0, len(n.Content))
	for i, item := range n.Content {
		st, err := p.step(i+1, item)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// step decodes one step: either a bare operation name or a one-key mapping
// from the operation to its arguments (a string is shorthand for the main
// argument: the prompt text or the session reference).
// It is long because it is one switch over the operations, each case
// decoding that operation's arguments; it mirrors runner.step.
func (p parser) step(idx int, n *yaml.Node) (Step, error) {
	st := Step{Index: idx, Line: n.Line}
	where := func() string {
		if st.Op == "" {
			return fmt.Sprintf("step %d", idx)
		}
		return fmt.Sprintf("step %d (%s)", idx, st.Op)
	}
	var args *yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		st.Op = n.Value
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			return st, p.errf(n, where(), "a step is one operation: a name or a single-key mapping")
		}
		st.Op, args = n.Content[0].Value, n.Content[1]
		if args.Kind == yaml.ScalarNode && args.Tag == "!!null" {
			args = nil
		}
	default:
		return st, p.errf(n, where(), "a step is one operation: a name or a single-key mapping")
	}
	var allowed []string
	shorthand := ""
	switch st.Op {
	case OpInitialize, OpRestart:
	case OpNewSession:
		allowed = []string{"as", "additional_directories"}
		shorthand = "as"
	case OpDeleteSession, OpCancelRequest:
		allowed, shorthand = []string{"session"}, "session"
	case OpLoadSession:
		allowed, shorthand = []string{"session"}, "session"
	case OpPrompt:
		allowed, shorthand = []string{"text", "session", "background", "permissions", "answers", "expect_error"}, "text"
	case OpAwaitPrompt:
		allowed, shorthand = []string{"session", "expect_error"}, "session"
	case OpCancel:
		allowed, shorthand = []string{"session"}, "session"
	case OpWait:
		allowed = []string{"session", "child_settled", "idle", "parent_idle", "turn_started", "turn_ended", "model_call", "step_reached", "queued"}
	case OpListAgentsEx:
		allowed, shorthand = []string{"session", "scope"}, "session"
	case OpSetMode:
		allowed, shorthand = []string{"mode", "session"}, "mode"
	case OpSetModel:
		allowed, shorthand = []string{"model", "session"}, "model"
	case OpWriteFile:
		allowed = []string{"path", "content"}
	default:
		return st, p.errf(n, where(), "unknown operation %q (want initialize, new_session, load_session, prompt, await_prompt, cancel, cancel_request, wait, restart, list_agents_via_ext, delete_session, set_mode, set_model, write_file)", st.Op)
	}
	f := map[string]*yaml.Node{}
	if args != nil {
		switch {
		case args.Kind == yaml.ScalarNode && shorthand != "":
			f[shorthand] = args
		case args.Kind == yaml.MappingNode && len(allowed) > 0:
			var err error
			if f, err = p.fields(args, where(), allowed...); err != nil {
				return st, err
			}
		default:
			return st, p.errf(args, where(), "unexpected arguments")
		}
	}
	var err error
	get := func(key string) (string, error) {
		if v, ok := f[key]; ok {
			return p.str(v, where()+"."+key)
		}
		return "", nil
	}
	if st.Session, err = get("session"); err != nil {
		return st, err
	}
	if st.As, err = get("as"); err != nil {
		return st, err
	}
	if st.Text, err = get("text"); err != nil {
		return st, err
	}
	if st.Scope, err = get("scope"); err != nil {
		return st, err
	}
	if st.Mode, err = get("mode"); err != nil {
		return st, err
	}
	if st.Model, err = get("model"); err != nil {
		return st, err
	}
	if st.Path, err = get("path"); err != nil {
		return st, err
	}
	if st.Content, err = get("content"); err != nil {
		return st, err
	}
	if v, ok := f["permissions"]; ok {
		if st.Permissions, err = p.answers(v, where()+".permissions"); err != nil {
			return st, err
		}
	}
	if v, ok := f["answers"]; ok {
		if st.Answers, err = p.answers(v, where()+".answers"); err != nil {
			return st, err
		}
	}
	if v, ok := f["additional_directories"]; ok {
		if st.Dirs, err = p.dirNames(v, where()+".additional_directories"); err != nil {
			return st, err
		}
	}
	if v, ok := f["background"]; ok {
		if st.Background, err = p.boolean(v, where()+".background"); err != nil {
			return st, err
		}
	}
	if v, ok := f["expect_error"]; ok {
		if st.ExpectError, err = p.boolean(v, where()+".expect_error"); err != nil {
			return st, err
		}
	}
	switch st.Op {
	case OpNewSession:
		if st.As == "" {
			st.As = MainRef
		}
	case OpLoadSession:
		if st.Session == "" {
			return st, p.errf(n, where(), "needs the session to load")
		}
	case OpPrompt:
		if st.Text == "" {
			return st, p.errf(n, where(), "needs a non-empty text")
		}
	case OpSetMode:
		if st.Mode == "" {
			return st, p.errf(n, where(), "needs the mode to set")
		}
	case OpSetModel:
		if st.Model == "" {
			return st, p.errf(n, where(), "needs the model to choose")
		}
	case OpWriteFile:
		if !filepath.IsLocal(st.Path) {
			return st, p.errf(n, where(), "needs a path relative to $CWD, inside it")
		}
	case OpListAgentsEx:
		switch st.Scope {
		case "":
			st.Scope = "children"
		case "children", "descendants":
		default:
			return st, p.errf(f["scope"], where(), `scope must be "children" or "descendants"`)
		}
	case OpWait:
		if args == nil || args.Kind != yaml.MappingNode {
			return st, p.errf(n, where(), "needs a mapping of conditions")
		}
		ref, w, err := p.wait(args, where())
		if err != nil {
			return st, err
		}
		st.Session, st.Wait = ref, w
	}
	if st.Session == "" && st.Op != OpNewSession && st.Op != OpInitialize && st.Op != OpRestart && st.Op != OpWriteFile {
		st.Session = MainRef
	}
	return st, nil
}

// MainRef is the default session reference: the session created by the
// first new_session.
const MainRef = "main"

// CwdPlaceholder stands for the run's working directory in scenario files
// and recordings; DataPlaceholder for the data directory.
const (
	CwdPlaceholder  = "$CWD"
	DataPlaceholder = "$DATA"
)

// errUnknown is wrapped by Load and Run for an unknown scenario name.
var errUnknown = errors.New("unknown scenario")
