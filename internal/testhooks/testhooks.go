package testhooks

import (
	"context"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/driver/inprocess"
	"github.com/acp-agent/acp-agent/persistence"
)

// Hooks are the test-only knobs of one agent process. The zero value
// changes nothing.
type Hooks struct {
	// Model, when set, is used as is instead of resolving Config.Model
	// (tests and the scenario runner pass a scripted model).
	Model model.Model
	// WrapModel, when set, wraps the resolved model (the scenario runner
	// observes model calls through it).
	WrapModel func(model.Model) model.Model
	// StepGate is agent.Options.StepGate for every in-process agent: the
	// scenario runner holds a step there until a recorded notice arrived
	// (step fences).
	StepGate func(ctx context.Context, c model.Caller)
	// NoSync skips fsync (tests, benchmarks and scenarios: they test
	// behaviour, not durability).
	NoSync bool
	// StorageFault is persistence.Options.Fault (crash tests).
	StorageFault func(persistence.FaultPoint)
	// StorageFaultErr is persistence.Options.FaultErr: it can fail a
	// storage step as a full disk would (disk-full tests).
	StorageFaultErr func(persistence.FaultPoint) error
	// PanicOnBug makes ACP handler panics crash instead of answering an
	// internal error.
	PanicOnBug bool
	// Faults injects failures into in-process children (scenarios).
	Faults inprocess.Faults
	// AfterCompaction is agent.Options.AfterCompaction for every agent: a
	// fault point right after a session/compaction event is durable and
	// before any request uses it (crash tests).
	AfterCompaction func(sessionID string, seq int64)
	// OnQueued is subagent.Options.OnQueued: called when a background
	// start begins to wait for a slot (scenario fences observe it).
	OnQueued func(parentID, childID string)
	// Now is the subagent stall watchdog's clock (nil: time.Now).
	Now func() time.Time
	// PrepareStarted, when set, is called as a top-level session's
	// environment probe (agent.Options.PrepareSystem) starts, before it
	// probes (ACP tests check it starts with session/new, not with the
	// first prompt).
	PrepareStarted func(sessionID string)
	// WorktreeGitEnv is worktree.Git.Env: the identity and dates of the
	// commits the agent makes for worktree children (scenarios pin them,
	// so commit hashes are the same on every run).
	WorktreeGitEnv []string
	// WorktreeFault is worktree.Intents.Fault: called at each named step
	// of making a child's worktree (crash tests kill the process there).
	WorktreeFault func(point string)
	// DigestTicks is subagent.DigestOptions.Ticks: tests tick the digest
	// throttle by hand.
	DigestTicks func() (ticks <-chan time.Time, stop func())
	// StoreCall, when set, is called with the request's context before
	// each read the ACP server makes of stored sessions (op "list",
	// "header", "inspect", "load"); its error fails the read. Tests hold
	// a request there to cancel it in flight ($/cancel_request).
	StoreCall func(ctx context.Context, op, id string) error
	// QuestionAfter is the clock of children's question deadlines
	// (acp.NewHeldQuestions): tests fire it by hand.
	QuestionAfter func(time.Duration) <-chan time.Time
}
