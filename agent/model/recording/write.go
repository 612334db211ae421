package recording

import (
	"bytes"
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
	// Description is the scenario's description (shown at the top of its
	// transcript).
	Description string
	// Prompt is the prompt text.
	Prompt string
	// Mode, when set, is set with set_mode before the prompt.
	Mode string
	// Permissions are the answers the client gave to permission
	// questions, in order (option ids).
	Permissions []string
	// Settled, when positive, adds a wait for that many settlement
	// notices on the session and for it to be idle (exec
	// --wait-children).
	Settled int
	// ContextWindow is the run's --context-window (0: none), so a replay
	// compacts where the recording did.
	ContextWindow int
	// Fences order the replay as the recording went: each holds the
	// first model call of the sessions with script key Key until the
	// root session's turn TurnEnded has ended and it is idle (a
	// background child whose settlement notice started a turn of its
	// own, after that one).
	Fences []Fence
}

// Fence is one scenario fence (scenarios/README.md, "Waits and fences").
type Fence struct {
	Key       string
	Call      int
	TurnEnded int
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
	Until   map[string]any `yaml:"until"`
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
	Summary       string             `yaml:"summary"`
	Description   string             `yaml:"description,omitempty"`
	ContextWindow int                `yaml:"context_window,omitempty"`
	Files         map[string]string  `yaml:"files,omitempty"`
	Fences        []fence            `yaml:"fences,omitempty"`
	Model         map[string][]reply `yaml:"model"`
	Steps         []any              `yaml:"steps"`
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
		Files:         r.Files(),
		Model:         map[string][]reply{},
	}
	for key, list := range r.Replies() {
		out := make([]reply, len(list))
		for i, rep := range list {
			out[i] = toReply(rep)
		}
		doc.Model[key] = out
	}
	for _, f := range s.Fences {
		doc.Fences = append(doc.Fences, fence{Session: f.Key, Call: f.Call, Until: map[string]any{"session": "main", "turn_ended": f.TurnEnded, "idle": true}})
	}
	doc.Steps = []any{"initialize", "new_session"}
	if s.Mode != "" {
		doc.Steps = append(doc.Steps, map[string]string{"set_mode": s.Mode})
	}
	prompt := map[string]any{"text": r.red.Redact(s.Prompt)}
	if len(s.Permissions) > 0 {
		prompt["permissions"] = s.Permissions
	}
	doc.Steps = append(doc.Steps, map[string]any{"prompt": prompt})
	if s.Settled > 0 {
		doc.Steps = append(doc.Steps, map[string]any{"wait": map[string]any{"child_settled": s.Settled, "idle": true}})
	}
	var b bytes.Buffer
	b.WriteString("# Recorded by acp-agent exec --record. Replay it keyless with\n#   acp-agent scenario test --dir DIR [--update]\n# (format: scenarios/README.md). Tool results are not recorded: the tools\n# run for real against the files below.\n")
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

// Write writes the scenario into dir (created if needed) as
// dir/scenario.yaml; the rest of dir (goldens) is left alone.
func (r *Recorder) Write(dir string, s Session) error {
	data, err := r.Scenario(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ScenarioFile), data, 0o644)
}
