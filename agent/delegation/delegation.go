package delegation

// Tool names of the delegation tools (subagent-contract.md).
const (
	ToolSubagent    = "subagent"
	ToolFork        = "subagent_fork"
	ToolSendMessage = "send_message"
	ToolInterrupt   = "interrupt_agent"
	ToolReport      = "report"
	ToolListAgents  = "list_agents"
)

// IsStart reports whether name is a tool that starts a child (subagent or
// subagent_fork).
func IsStart(name string) bool { return name == ToolSubagent || name == ToolFork }

// Child modes.
const (
	ModeOneShot     = "one-shot"
	ModeContinuable = "continuable"
)

// MetaKey is the _meta key under which a delegation's tool call names its
// child: {"childSessionId", "mode", "depth"}.
const MetaKey = "acp-agent/subagent"

// ChildLink returns the _meta that links a tool call to its child session.
func ChildLink(childID, mode string, depth int) map[string]any {
	return map[string]any{MetaKey: map[string]any{"childSessionId": childID, "mode": mode, "depth": depth}}
}

// LinkedChild reads the child id back from a ChildLink meta (as sent or
// as decoded from the log).
func LinkedChild(meta map[string]any) (childID string, ok bool) {
	link, isMap := meta[MetaKey].(map[string]any)
	if !isMap {
		return "", false
	}
	childID, ok = link["childSessionId"].(string)
	return childID, ok && childID != ""
}

// StopCompleted is the stop reason of a child that finished its work
// (driver.StopCompleted, repeated here for packages below the driver).
const StopCompleted = "completed"

// The other stop reasons of a settled child (driver.Stop…, repeated for
// the same reason: acp reads them from settlement notices).
const (
	StopAborted   = "aborted"
	StopError     = "error"
	StopMaxTokens = "max-tokens"
	StopRefusal   = "refusal"
	StopMaxTurns  = "max-turns"
)

// Result kinds of a start tool's structured (raw) output.
const (
	ResultContinuable = "continuable" // {"kind", "subagentId"}
	ResultForeground  = "foreground"  // {"kind", "runId", "output"}
)

// ContinuableResult is the raw output of a started continuable child.
func ContinuableResult(childID string) map[string]any {
	return map[string]any{"kind": ResultContinuable, "subagentId": childID}
}

// ForegroundResult is the raw output of a finished one-shot run.
func ForegroundResult(runID string, output any) map[string]any {
	return map[string]any{"kind": ResultForeground, "runId": runID, "output": output}
}

// ResultChild reads the child id and mode back from a start tool's raw
// output (as decoded from the log); ok is false when raw names no child.
func ResultChild(raw any) (childID, mode string, ok bool) {
	m, isMap := raw.(map[string]any)
	if !isMap {
		return "", "", false
	}
	switch m["kind"] {
	case ResultContinuable:
		childID, _ = m["subagentId"].(string)
		mode = ModeContinuable
	case ResultForeground:
		childID, _ = m["runId"].(string)
		mode = ModeOneShot
	}
	return childID, mode, childID != ""
}

// TypeWorktreeSettled is the root-session log event (ignorable) recording
// that the worktree of a one-shot child whose call never returned (the
// agent was killed while it ran) was settled when the session was next
// loaded: removed when untouched, kept and reported otherwise. The
// subagent runtime writes what it did; the adapter shows Message to the
// person, live and on replay; it also marks the child settled, so a later
// load does nothing more.
const TypeWorktreeSettled = "subagent/worktree"

// WorktreeSettled is the payload of a TypeWorktreeSettled event.
type WorktreeSettled struct {
	ChildSessionID string `json:"childSessionId"`
	Path           string `json:"path"`
	Branch         string `json:"branch"`
	// Kept is true when the worktree (or its branch) stays.
	Kept     bool   `json:"kept"`
	Summary  string `json:"summary,omitempty"`
	Diffstat string `json:"diffstat,omitempty"`
	// Error says why git could not tell what it holds (it is then kept).
	Error string `json:"error,omitempty"`
	// Message is the text shown to the person.
	Message string `json:"message"`
}

// TypeQuestionRefused is the child-session log event (ignorable)
// recording that a question the child asked its root's person was refused
// because nobody answered it within the deadline (the setting
// subagents.questionTimeout). The ACP adapter writes it when it refuses
// the question and shows Message; the subagent catalog projects the last
// one, so every listing says "question refused: <reason>", also after a
// restart.
const TypeQuestionRefused = "subagent/question-refused"

// QuestionRefused is the payload of a TypeQuestionRefused event.
type QuestionRefused struct {
	// Title is what the question was about.
	Title string `json:"title"`
	// Reason says why it was refused.
	Reason string `json:"reason"`
	// Message is the text shown to the person.
	Message string `json:"message"`
}
