package recording

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/acp-agent/acp-agent/agent/model/scripted"
)

// ScenarioFile is the name of the scenario file in a recorded directory.
const ScenarioFile = "scenario.yaml"

// Session is what the client did in the recorded run, for the scenario's
// steps.
type Session struct {
	// By names the recording command in the file's header comment
	// ("exec --record", "--record"); "" means exec --record.
	By string
	// Description is the scenario's description (shown at the top of its
	// transcript).
	Description string
	// Prompt is the prompt text of a one-prompt run (exec): with Steps
	// empty, the steps are set_mode Mode (when set), the prompt with
	// Permissions, and the Settled wait.
	Prompt string
	// Mode, when set, is set with set_mode before the prompt.
	Mode string
	// Permissions are the answers the client gave to permission
	// questions, in order (option ids).
	Permissions []string
	// PromptFailed: the prompt was answered with an error (the turn
	// failed); its step expects that (expect_error).
	PromptFailed bool
	// Settled, when positive, adds a wait for that many settlement
	// notices on the session and for it to be idle (exec
	// --wait-children).
	Settled int
	// Steps, when set, are the client's steps after initialize and
	// new_session, in order (a served connection: several prompts,
	// cancels, mode changes); Prompt, Mode, Permissions and Settled are
	// then ignored.
	Steps []Step
	// Client is what the recorded client announced (fs, terminal,
	// compaction), so the replay's client takes the same paths.
	Client Client
	// MCPServers are the names of the HTTP MCP servers the client named
	// in session/new; a replay serves the demo MCP server under each.
	MCPServers []string
	// ContextWindow is the run's --context-window (0: none), so a replay
	// compacts where the recording did.
	ContextWindow int
	// MaxTurns is the run's --max-turns (0: none), so a replay stops
	// where the recording did.
	MaxTurns int
	// Fences order the replay as the recording went: each holds the
	// first model call of the sessions with script key Key until the
	// root session's turn TurnEnded has ended and it is idle (a
	// background child whose settlement notice started a turn of its
	// own, after that one).
	Fences []Fence
}

// Client is the scenario's client section.
type Client struct {
	FS, Terminal, Compaction bool
}

// Step is one client step of the scenario (scenarios/README.md, "Steps"):
// Op is "prompt" (Text, Permissions, Background), "await_prompt",
// "cancel", "set_mode" (Mode) or "wait" (Wait).
type Step struct {
	Op          string
	Text        string
	Permissions []string
	Background  bool
	// ExpectError (prompt, await_prompt): the prompt was answered with an
	// error.
	ExpectError bool
	Mode        string
	Wait        Wait
}

// Wait is a wait step's condition on the main session (the fields set).
type Wait struct {
	ChildSettled int
	TurnEnded    int
	// ModelCall, when not nil, waits for the session's model call
	// *ModelCall to have been entered.
	ModelCall *int
	// StepReached, when not nil, waits for the session to have reached
	// the step boundary before its model call *StepReached.
	StepReached *int
	Idle        bool
}

// Step operations of Step.Op.
const (
	OpPrompt      = "prompt"
	OpAwaitPrompt = "await_prompt"
	OpCancel      = "cancel"
	OpSetMode     = "set_mode"
	OpWait        = "wait"
)

// Fence is one scenario fence (scenarios/README.md, "Waits and fences"):
// it holds model call Call of the sessions with script key Key (with
// AtStep, the step boundary before it) until a condition holds. With
// TurnEnded set the condition is the root session's turn TurnEnded ended
// and the session idle; else it is Until on the session UntilSession
// names ("main", a child's label).
type Fence struct {
	Key          string
	Call         int
	AtStep       bool
	TurnEnded    int
	UntilSession string
	Until        Wait
}

// reply is scripted.Reply with empty fields left out of the YAML.
type reply struct {
	Text                  string     `yaml:"text,omitempty"`
	Reasoning             string     `yaml:"reasoning,omitempty"`
	ToolCalls             []toolCall `yaml:"tool_calls,omitempty"`
	Usage                 *usage     `yaml:"usage,omitempty"`
	Finish                string     `yaml:"finish,omitempty"`
	Error                 string     `yaml:"error,omitempty"`
	ErrorAfterChunks      bool       `yaml:"error_after_chunks,omitempty"`
	ContextLengthExceeded bool       `yaml:"context_length_exceeded,omitempty"`
	StreamBroken          bool       `yaml:"stream_broken,omitempty"`
	Hang                  bool       `yaml:"hang,omitempty"`
}

type fence struct {
	Session string         `yaml:"session"`
	Call    int            `yaml:"call"`
	At      string         `yaml:"at,omitempty"`
	Until   map[string]any `yaml:"until"`
}

type client struct {
	FS         bool `yaml:"fs,omitempty"`
	Terminal   bool `yaml:"terminal,omitempty"`
	Compaction bool `yaml:"compaction,omitempty"`
}

type mcpServer struct {
	Name string `yaml:"name"`
}

type toolCall struct {
	ID        string `yaml:"id,omitempty"`
	Name      string `yaml:"name"`
	Arguments string `yaml:"arguments"`
}

type usage struct {
	Input  int `yaml:"input"`
	Output int `yaml:"output"`
}

type document struct {
	Summary       string `yaml:"summary"`
	Description   string `yaml:"description,omitempty"`
	ContextWindow int    `yaml:"context_window,omitempty"`
	MaxTurns      int    `yaml:"max_turns,omitempty"`
	// TokenEstimates: the estimates automatic compaction decisions of
	// the recorded run used, by script key and call.
	TokenEstimates map[string]map[int]int `yaml:"token_estimates,omitempty"`
	Client         *client                `yaml:"client,omitempty"`
	MCPServers     []mcpServer            `yaml:"mcp_servers,omitempty"`
	Files          map[string]string      `yaml:"files,omitempty"`
	Fences         []fence                `yaml:"fences,omitempty"`
	Model          map[string][]reply     `yaml:"model"`
	Steps          []any                  `yaml:"steps"`
}

func toReply(r scripted.Reply) reply {
	out := reply{Text: r.Text, Reasoning: r.Reasoning, Finish: r.Finish, Error: r.Error,
		ErrorAfterChunks: r.ErrorAfterChunks, ContextLengthExceeded: r.ContextLengthExceeded, StreamBroken: r.StreamBroken, Hang: r.Hang}
	for _, c := range r.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, toolCall(c))
	}
	if r.Usage != nil {
		out.Usage = &usage{Input: r.Usage.Input, Output: r.Usage.Output}
	}
	return out
}

// Scenario renders the recording as a scenario file (scenarios/README.md).
func (r *Recorder) Scenario(s Session) ([]byte, error) {
	doc := document{
		Summary:       "recorded session",
		Description:   r.red.Redact(s.Description),
		ContextWindow: s.ContextWindow,
		MaxTurns:      s.MaxTurns,
		Files:         r.Files(),
		Model:         map[string][]reply{},
	}
	if est := r.Estimates(); len(est) > 0 {
		doc.TokenEstimates = est
	}
	for key, list := range r.Replies() {
		out := make([]reply, len(list))
		for i, rep := range list {
			out[i] = toReply(rep)
		}
		doc.Model[key] = out
	}
	for _, f := range s.Fences {
		out := fence{Session: f.Key, Call: f.Call}
		if f.AtStep {
			out.At = "step"
		}
		if f.TurnEnded > 0 {
			out.Until = map[string]any{"session": "main", "turn_ended": f.TurnEnded, "idle": true}
		} else {
			out.Until = waitFields(f.Until)
			out.Until["session"] = cmp.Or(f.UntilSession, "main")
		}
		doc.Fences = append(doc.Fences, out)
	}
	if s.Client != (Client{}) {
		doc.Client = &client{FS: s.Client.FS, Terminal: s.Client.Terminal, Compaction: s.Client.Compaction}
	}
	for _, name := range s.MCPServers {
		doc.MCPServers = append(doc.MCPServers, mcpServer{Name: name})
	}
	steps := s.Steps
	if len(steps) == 0 {
		steps = s.oneShot()
	}
	doc.Steps = []any{"initialize", "new_session"}
	for _, st := range steps {
		doc.Steps = append(doc.Steps, r.step(st))
	}
	var b bytes.Buffer
	by := s.By
	if by == "" {
		by = "exec --record"
	}
	fmt.Fprintf(&b, "# Recorded by acp-agent %s. Replay it keyless with\n#   acp-agent scenario test --dir DIR [--update]\n# (format: scenarios/README.md). Tool results are not recorded: the tools\n# run for real against the files below.\n", by)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render the scenario: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	// The result must be a script the scripted model accepts.
	if _, err := scripted.Parse(b.Bytes()); err != nil {
		return nil, fmt.Errorf("the recorded script does not parse: %w", err)
	}
	return b.Bytes(), nil
}

// oneShot is the steps of a one-prompt run (exec).
func (s Session) oneShot() []Step {
	var out []Step
	if s.Mode != "" {
		out = append(out, Step{Op: OpSetMode, Mode: s.Mode})
	}
	out = append(out, Step{Op: OpPrompt, Text: s.Prompt, Permissions: s.Permissions, ExpectError: s.PromptFailed})
	if s.Settled > 0 {
		out = append(out, Step{Op: OpWait, Wait: Wait{ChildSettled: s.Settled, Idle: true}})
	}
	return out
}

// step renders one step as the scenario file writes it: the shorthand
// when it has no argument but the main one.
func (r *Recorder) step(st Step) any {
	switch st.Op {
	case OpAwaitPrompt:
		if st.ExpectError {
			return map[string]any{OpAwaitPrompt: map[string]any{"expect_error": true}}
		}
		return st.Op
	case OpCancel:
		return st.Op
	case OpSetMode:
		return map[string]string{OpSetMode: st.Mode}
	case OpWait:
		return map[string]any{OpWait: waitFields(st.Wait)}
	}
	prompt := map[string]any{"text": r.red.Redact(st.Text)}
	if len(st.Permissions) > 0 {
		prompt["permissions"] = st.Permissions
	}
	if st.Background {
		prompt["background"] = true
	}
	if st.ExpectError && !st.Background {
		prompt["expect_error"] = true
	}
	return map[string]any{OpPrompt: prompt}
}

// waitFields renders a wait condition as the scenario file writes it.
func waitFields(wt Wait) map[string]any {
	w := map[string]any{}
	if wt.ChildSettled > 0 {
		w["child_settled"] = wt.ChildSettled
	}
	if wt.TurnEnded > 0 {
		w["turn_ended"] = wt.TurnEnded
	}
	if wt.ModelCall != nil {
		w["model_call"] = *wt.ModelCall
	}
	if wt.StepReached != nil {
		w["step_reached"] = *wt.StepReached
	}
	if wt.Idle {
		w["idle"] = true
	}
	return w
}

// Write writes the scenario into dir (created if needed) as
// dir/scenario.yaml; the rest of dir (goldens) is left alone. The file
// is written to a temporary name and renamed over the old one, so a
// crash leaves the previous file or the new one, never half of either.
func (r *Recorder) Write(dir string, s Session) error {
	data, err := r.Scenario(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+ScenarioFile+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, ScenarioFile))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
