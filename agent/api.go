package agent

// This file defines the public API of the agent loop. The signatures are a
// contract shared by packages subagent, driver/inprocess and acp; change
// them only together with those packages.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
)

// Status is an agent's coarse state: "idle" or "running".
type Status string

// Statuses.
const (
	StatusIdle    Status = "idle"
	StatusRunning Status = "running"
)

// DefaultMaxSteps is the per-turn step limit when Options.MaxSteps is 0.
const DefaultMaxSteps = 64

// Options configure an Agent.
type Options struct {
	Model model.Model
	// Route is passed on every request (for example a child's recorded route).
	Route model.Route
	// RouteNow, when set, is asked before each model request for the
	// session's current route (a model the user can switch per session);
	// its zero value means Route. A change applies from the next request.
	RouteNow func() model.Route
	// NoThinking, when set, is asked before each model request whether
	// the session's person turned thinking off (model.Request.NoThinking);
	// nil keeps the model's configured thinking.
	NoThinking func() bool
	// ScriptKey keys the scripted model: "main" for top-level sessions, the
	// delegation label for children. Defaults to "main".
	ScriptKey string
	// Tools offered to the model; nil means none.
	Tools *tool.Registry
	// System is the system prompt when SystemPrompt is nil.
	System string
	// SystemPrompt, when set, assembles the session's system prompt from
	// the tools it is offered. It is called once per session, before its
	// first model request, and the result is recorded in the log
	// (session/system-prompt); a session whose log has one uses that
	// instead (system.go).
	SystemPrompt func(ctx context.Context, tools []model.ToolSpec) string
	// PrepareSystem, when set with SystemPrompt, starts the slow part of
	// the assembly ahead of it (the environment probe): New runs it on a
	// goroutine of the agent's own when the log records no prompt yet, so
	// the first model request finds it done or waits only the remainder.
	// Its context ends at Close, which waits for it to return.
	// SystemPrompt must not depend on it having run or finished.
	PrepareSystem func(ctx context.Context)

	MaxSteps  int
	MaxTokens int
	// Limit, when set, is asked before each step of a turn (after the
	// MaxSteps check, before steering messages are delivered, so a steer
	// it sends reaches this step's request): a non-nil reason ends the
	// turn with it before the model is called (a spending limit).
	Limit LimitFunc
	// StepGate, when set, is called on the loop goroutine each time a
	// turn is about to take the steering messages waiting for its model
	// call c.Call: at the start of every step, and when a step would end
	// the turn, before it looks for steering that would take another
	// step (so it may be called twice for one call). It may block until
	// ctx (the turn's) ends. A keyless replay holds a step there until a
	// notice the recorded run delivered with that call has arrived
	// (scenario step fences), so a background child's settlement lands
	// in the same step on every replay.
	StepGate func(ctx context.Context, c model.Caller)
	// EstimateTokens, when set, is given the estimate of model call c's
	// request (budget.EstimateRequest) each time the automatic compaction
	// decision is about to use it, and returns the estimate to use (its
	// difference from the given one also shifts the estimates of that
	// compaction). A recording notes the real run's estimates; a keyless
	// replay, whose system prompt and paths differ from the real run's by
	// a few dozen tokens, gives them back, so a replay near the threshold
	// compacts exactly where the run did.
	EstimateTokens func(c model.Caller, estimate int) int
	// TurnTimeout, when positive, bounds each turn's wall time: a turn
	// still running then is cancelled and ends with kind "timeout".
	TurnTimeout time.Duration
	// Budget is the context policy: the window (known models or the
	// override) and the compaction threshold. A zero window disables
	// automatic compaction.
	Budget budget.Config
	// AfterCompaction, when set, is called on the loop goroutine right
	// after a session/compaction event was made durable, before any
	// request uses it (a fault hook for crash tests).
	AfterCompaction func(ev session.Event)
	// PreStep hooks run, in order, before every model request of a step.
	PreStep []PreStepHook
	// Journal is the agent's way to its durable store; nil keeps the log
	// in memory only (tests, throwaway sessions).
	Journal Journal
	// OnIdle is called (on the loop goroutine, after it stops running) each
	// time the agent becomes quiescent: idle with no waking inbox item.
	OnIdle func(a *Agent)
	// OnClose, when set, is called once by the first Close, after the loop
	// goroutine has exited: the end of what the agent owns outside the
	// log (an external agent's process, driver/external).
	OnClose func()
	Logger  *slog.Logger
}

// Journal is all the agent needs from durable storage and from whoever
// shows its session (the write-ahead points of the package doc). It is
// declared here and implemented by the composition root over package
// persistence and the ACP server; the agent never imports either.
type Journal interface {
	// SyncTo makes the events of session id up to and including seq
	// durable (written and fsynced). The loop calls it before each model
	// request, after each tool/call (before the tool runs) and after each
	// turn/end. It must be cheap when seq is already durable.
	SyncTo(ctx context.Context, id string, seq int64) error
	// Shown waits until the event seq of session id (a durable tool/call)
	// is on the client's wire, so whatever the tool then sends the client
	// about the call (a permission request) follows it. It returns at once
	// where nobody shows the session. Its error is logged; the tool still
	// runs. It must honour ctx (the turn's).
	Shown(ctx context.Context, id string, seq int64) error
}

// JournalErr is an optional Journal method set: WriteErr returns the
// sticky failure of session id's store (a full disk), nil while it takes
// writes. The loop checks it after each streamed chunk, so a turn whose
// chunks can no longer be saved (and so are no longer shown) ends at once
// with SESSION_WRITE_FAILED instead of streaming on unseen. It must be
// cheap (a lock and a field read).
type JournalErr interface {
	WriteErr(id string) error
}

// Decision is a pre-step hook's verdict.
type Decision int

// Decisions: Enter lets the step call the model; Reject ends the turn
// "blocked" before the model is called.
const (
	Enter Decision = iota
	Reject
)

// StepInfo describes the step a pre-step hook is asked about.
type StepInfo struct {
	Turn, Step int
	// FirstEnter is true until some hook chain returned Enter for the first
	// time in this agent's life (used to append a one-shot child's
	// descriptor inside its first turn).
	FirstEnter bool
}

// LimitFunc is Options.Limit.
type LimitFunc func(ctx context.Context, a *Agent, step StepInfo) *session.TurnEndReason

// ErrTurnTimeout is the cancellation cause of a turn that ran past
// Options.TurnTimeout.
var ErrTurnTimeout = errors.New("the turn ran out of its time limit")

// PreStepHook runs before a step's model request. Returning an error ends
// the turn with kind "error".
type PreStepHook func(ctx context.Context, a *Agent, step StepInfo) (Decision, error)

// TurnResult is how a turn ended.
type TurnResult struct {
	Turn   int
	Reason session.TurnEndReason
	// Output is the final assistant output of the turn (subagent-contract.md
	// §2.9 applied to the turn's events).
	Output []session.Block
}

// Update is one item an agent publishes to its subscribers: either a log
// event of its session or a transient tool progress report.
type Update struct {
	Event    *session.Event
	Progress *ToolProgress
	// Notice is a transient report of the model call in progress (a retry
	// wait); it is not logged.
	Notice *model.Notice
}

// ToolProgress is a transient progress report of a running tool call.
type ToolProgress struct {
	CallID string
	tool.Progress
}
