package subagent

// This file defines the model-facing delegation tools: `subagent` and
// `subagent_fork` (subagent-contract.md §4.4).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acp-agent/acp-agent/agent"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/delegation"
	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/policy"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/driver"
	"github.com/acp-agent/acp-agent/subagent/budgets"
)

// Tool names.
const (
	SubagentToolName      = delegation.ToolSubagent
	ForkToolName          = delegation.ToolFork
	SendMessageToolName   = delegation.ToolSendMessage
	InterruptToolName     = delegation.ToolInterrupt
	ReportToolName        = delegation.ToolReport
	DefaultMaxDepth       = 3
	ProgressMetaKey       = delegation.MetaKey
	CodeSubagentRunFailed = "SUBAGENT_RUN_FAILED"
)

// DelegationConfig configures a delegation tool.
type DelegationConfig struct {
	// Provider names the provider children start through.
	Provider string
	// Name is the tool name (default "subagent").
	Name string
	// Fork says children see this conversation's completed turns (changes
	// the descriptions only; the provider decides).
	Fork bool
	// Background offers run_in_background: background runs are
	// continuable children and are the default. Without it every call
	// runs a one-shot child in the foreground.
	Background bool
	// MaxDepth caps delegation depth (nil: DefaultMaxDepth).
	MaxDepth   *int
	Route      *model.Route
	Persona    string
	ToolFilter *ToolFilter
	// Agents, when set, offers the `agent` parameter: the agent
	// definitions the model may pick by name (agents.go).
	Agents *AgentChoices
}

// Delegation is the `subagent` / `subagent_fork` tool.
type Delegation struct {
	svc *Service
	cfg DelegationConfig
}

var (
	_ tool.Tool = (*Delegation)(nil)
	_ tool.Kind = (*Delegation)(nil)
)

// NewDelegation returns a delegation tool over rt.
func NewDelegation(rt *Runtime, cfg DelegationConfig) *Delegation {
	if cfg.Name == "" {
		cfg.Name = SubagentToolName
	}
	if cfg.MaxDepth == nil {
		cfg.MaxDepth = Depth(DefaultMaxDepth)
	}
	return &Delegation{svc: rt.Service, cfg: cfg}
}

// NewSubagentTool is the shipped `subagent` tool: provider "spawn",
// background continuable children by default.
func NewSubagentTool(rt *Runtime) *Delegation {
	return NewDelegation(rt, DelegationConfig{Provider: "spawn", Name: SubagentToolName, Background: true})
}

// NewSubagentToolWith is NewSubagentTool offering the agent definitions
// of agents (nil or empty: none).
func NewSubagentToolWith(rt *Runtime, agents *AgentChoices) *Delegation {
	return NewDelegation(rt, DelegationConfig{Provider: "spawn", Name: SubagentToolName, Background: true, Agents: agents})
}

// NewForkTool is the shipped `subagent_fork` tool: provider "fork",
// foreground one-shot children.
func NewForkTool(rt *Runtime) *Delegation {
	return NewDelegation(rt, DelegationConfig{Provider: "fork", Name: ForkToolName, Fork: true})
}

const (
	paramDescription = "A short (3-5 word) description of the delegated task, for display."
	paramPromptFresh = "The complete, self-contained task for the subagent. It does not share this conversation's context, so include everything it needs."
	paramPromptFork  = "The task for the subagent. It already sees this conversation's completed turns, so build on them freely and state only what is new."
	paramBackground  = "Whether to run in the background and return a durable subagent id immediately. Defaults to true. Set false to wait for the result when your next action depends on it."
	paramLimits      = "Optional limits for this subagent; each may only narrow what its agent definition allows, never widen it. "
	paramMaxTokens   = paramLimits + "The most tokens (input plus output, over its whole life) it may use; reaching it stops the subagent with stop reason budget."
	paramMaxCost     = paramLimits + "The most it may spend, in US dollars at list prices (only where the model's price is known); reaching it stops the subagent with stop reason budget."
	paramMaxTurns    = paramLimits + "The most model requests in each of its turns; reaching it stops the turn with stop reason max-turns."
	paramTimeout     = paramLimits + "The most seconds each of its turns may run; reaching it stops the turn with stop reason timeout."
	paramIsolation   = "Where the subagent works. \"none\" (default): in this working tree. \"worktree\": in a new git worktree of this repository on a branch of its own, so it cannot disturb this tree or other subagents; when it finishes, an untouched worktree is removed and one with changes is kept and reported (path, branch, diffstat). Use worktree for subagents that edit files."

	descFresh = "Hand a self-contained piece of work (research, a scoped change, an analysis) to a subagent: a separate agent " +
		"with its own context, so the work does not fill this conversation. You get its result, not its intermediate " +
		"steps. It cannot see this conversation, so write a complete, standalone prompt."
	descFork = "Hand a piece of work to a subagent that starts from this conversation: it is seeded with every completed " +
		"turn so far (not the turn in progress). Use it when the work builds on what was already said (a follow-up " +
		"analysis, a review, a continuation) without spending this conversation's context on it. You get its result, " +
		"not its intermediate steps."
	descBackground = " This tool runs in the background by default: it returns a durable subagent id at once and keeps the " +
		"child's conversation available for later turns. When the child settles, the runtime sends you a notice with its " +
		"outcome and its final assistant message, if any; `send_message` starts another turn of the same child " +
		"conversation. Set `run_in_background: false` only when your next action needs the result."
	descForeground = " This call waits for the subagent and returns its result."
)

// SystemPromptSection returns the system-prompt paragraph that teaches the
// model to delegate in the background (empty for foreground-only tools).
func (d *Delegation) SystemPromptSection() string {
	if !d.cfg.Background {
		return ""
	}
	return fmt.Sprintf("Use %s in the background by default. Start independent delegations together in one assistant message "+
		"and continue useful work while they run. Set `run_in_background: false` only when your next action depends on "+
		"that subagent's result. When a background run settles, the runtime sends you a notice containing its outcome "+
		"and any final assistant message.", d.cfg.Name)
}

// Spec returns the tool's name, description and parameter schema.
func (d *Delegation) Spec() model.ToolSpec {
	prompt, desc := paramPromptFresh, descFresh
	if d.cfg.Fork {
		prompt, desc = paramPromptFork, descFork
	}
	props := map[string]any{
		"description": map[string]any{"type": "string", "description": paramDescription},
		"prompt":      map[string]any{"type": "string", "description": prompt},
	}
	if d.cfg.Background {
		props["run_in_background"] = map[string]any{"type": "boolean", "description": paramBackground}
		props["isolation"] = map[string]any{"type": "string", "enum": []string{string(IsolationNone), string(IsolationWorktree)}, "description": paramIsolation}
		desc += descBackground
	} else {
		desc += descForeground
	}
	props["maxTokens"] = map[string]any{"type": "integer", "minimum": 1, "description": paramMaxTokens}
	props["maxCostUsd"] = map[string]any{"type": "number", "exclusiveMinimum": 0, "description": paramMaxCost}
	props["maxTurns"] = map[string]any{"type": "integer", "minimum": 1, "description": paramMaxTurns}
	props["timeout"] = map[string]any{"type": "number", "exclusiveMinimum": 0, "description": paramTimeout}
	if d.cfg.Agents.offered() {
		props["agent"] = map[string]any{"type": "string", "description": paramAgent}
		desc += d.cfg.Agents.describe()
	}
	params, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": []string{"description", "prompt"}})
	return model.ToolSpec{Name: d.cfg.Name, Description: desc, Parameters: params}
}

// Kind is "think": delegation is reasoning work from the editor's view.
func (d *Delegation) Kind() string { return "think" }

type delegationArgs struct {
	Description     string `json:"description"`
	Prompt          string `json:"prompt"`
	RunInBackground *bool  `json:"run_in_background"`
	Isolation       string `json:"isolation"`
	Agent           string `json:"agent"`
	// Optional limits (narrowing only); Timeout in seconds.
	MaxTokens  int     `json:"maxTokens"`
	MaxCostUSD float64 `json:"maxCostUsd"`
	MaxTurns   int     `json:"maxTurns"`
	Timeout    float64 `json:"timeout"`
}

// limits returns the call's own limits.
func (a delegationArgs) limits() (budgets.Limits, error) {
	if a.Timeout < 0 || a.Timeout > 1e9 || math.IsNaN(a.Timeout) {
		return budgets.Limits{}, fmt.Errorf("timeout must be a positive number of seconds, got %v", a.Timeout)
	}
	l := budgets.Limits{MaxTokens: a.MaxTokens, MaxCostUSD: a.MaxCostUSD, MaxTurns: a.MaxTurns,
		Timeout: time.Duration(a.Timeout * float64(time.Second))}
	return l, l.Validate()
}

// childOptions are what a call's child is started with: the tool's
// configuration, or the agent definition the call picked.
type childOptions struct {
	route      *model.Route
	persona    string
	toolFilter *ToolFilter
	maxSteps   int
	limits     budgets.Limits
	definition *AgentDefinition
	// background is the default when the call does not say.
	background bool
	// isolation is the definition's; the call's own isolation wins.
	isolation Isolation
	// permissionMode and permissionScope are the definition's permission
	// mode and who wrote it ("" without a definition asking for one).
	permissionMode, permissionScope string
	// provider, when set, replaces the tool's provider (an external
	// agent's definition starts through ExternalProvider).
	provider string
}

// ExternalProvider is the driver children of external agent definitions
// start through (driver/external registers it).
const ExternalProvider = "external"

// providerFor is the provider opts' child starts through.
func (d *Delegation) providerFor(opts childOptions) string {
	if opts.provider != "" {
		return opts.provider
	}
	return d.cfg.Provider
}

// Execute starts the child: a continuable background child (the default
// when Background is set) or a foreground one-shot child whose final text
// output is the result.
// It is long because the call's arguments are checked against the tool's
// configuration and the agent definition in the order the contract
// states (background, agent, isolation, caps) before either start: each
// check is short and returns the model's error at once.
func (d *Delegation) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	caller, ok := inv.Caller.(*agent.Agent)
	if !ok || caller == nil {
		return tool.Result{}, errors.New("subagent tool requires a calling agent (exec.agent was undefined)")
	}
	var args delegationArgs
	if err := json.Unmarshal(inv.Arguments, &args); err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	if !d.cfg.Background && args.RunInBackground != nil && *args.RunInBackground {
		return tool.Result{}, errors.New("run_in_background is disabled for this tool instance (enableRunInBackground: false)")
	}
	opts := childOptions{route: d.cfg.Route, persona: d.cfg.Persona, toolFilter: d.cfg.ToolFilter, background: d.cfg.Background}
	if args.Agent != "" {
		var err error
		if opts, err = d.cfg.Agents.apply(args.Agent, opts); err != nil {
			return tool.Result{}, err
		}
	}
	asked, err := args.limits()
	if err == nil {
		opts.limits, err = budgets.Narrow(opts.limits, asked)
	}
	if err != nil {
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: "invalid arguments: " + err.Error()}
	}
	if opts.limits.MaxTurns > 0 {
		opts.maxSteps = opts.limits.MaxTurns
	}
	iso, err := ParseIsolation(args.Isolation)
	if err != nil || (!d.cfg.Background && args.Isolation != "") {
		msg := `invalid arguments: isolation must be "none" or "worktree"`
		if err == nil {
			msg = "isolation is not offered by this tool"
		}
		return tool.Result{}, &tool.Error{Code: tool.CodeInvalidArgs, Message: msg}
	}
	if args.Isolation == "" {
		iso = opts.isolation
	}
	if iso == IsolationWorktree && !canWrite(opts.permissionMode, opts.toolFilter) {
		// A child that cannot change files has nothing to isolate: no
		// worktree (and no checkout to wait for).
		iso = IsolationNone
	}
	background := opts.background
	if args.RunInBackground != nil {
		background = *args.RunInBackground
	}
	prompt := []session.Block{session.Text(args.Prompt)}
	// A definition's mode the session's caps is said to both models.
	capParent, capChild, capped := d.cfg.Agents.capNotes(ctx, caller, args.Description, opts)
	if capChild != "" {
		prompt = append([]session.Block{session.Text(capChild)}, prompt...)
	}
	withCap := func(res tool.Result) tool.Result {
		if capped == nil {
			return res
		}
		res.Content = append(res.Content, session.Text(capParent))
		if raw, ok := res.Raw.(map[string]any); ok {
			raw["permissionMode"] = capped
		}
		return res
	}
	if d.cfg.Background && background {
		var onQueued func(position, running int)
		if inv.Progress != nil {
			onQueued = func(position, running int) {
				inv.Progress(tool.Progress{Text: fmt.Sprintf("queued: %d background subagents are running (the limit); this one starts when one finishes (position %d)", running, position)})
			}
		}
		depth := caller.Session().Header().DelegationDepth + 1
		// The child's id is known before it starts, so that its digest
		// carries the link from its first update.
		childID := caller.Session().NewID()
		rep := newDigestReporter(d.svc.digest, false, childLinkMeta(childID, ModeContinuable, depth), inv.Progress)
		rep.holdFinal() // until the call has returned (setReport below)
		_, _, err := d.svc.StartContinuable(ctx, ContinuableSpec{
			Provider: d.providerFor(opts), Label: args.Description, CallID: inv.CallID, ChildID: childID, Prompt: prompt, Parent: caller,
			Route: opts.route, MaxDepth: d.cfg.MaxDepth, ToolFilter: opts.toolFilter, Persona: opts.persona,
			MaxSteps: opts.maxSteps, Definition: opts.definition, Limits: opts.limits, Isolation: iso, OnQueued: onQueued,
			Async:          true, // with isolation: the checkout does not hold up this call
			PermissionMode: opts.permissionMode, PermissionScope: opts.permissionScope,
			OnUpdate: rep.observe,
			OnSettled: func(stop string, wt *WorktreeOutcome) string {
				text := rep.finish(stop, wt)
				rep.sendFinal(text, stop)
				return text
			},
			OnReplaced: rep.handover,
		})
		if err != nil {
			rep.stop()
			return tool.Result{}, err
		}
		if inv.Progress != nil {
			inv.Progress(progress(fmt.Sprintf("started subagent %s", childID), childID, ModeContinuable, depth))
		}
		// From here the call has returned: the digest goes on through the
		// caller until the child settles.
		callID := inv.CallID
		rep.setReport(func(p tool.Progress) { caller.ReportProgress(callID, p) })
		text := "started subagent " + childID
		if iso == IsolationWorktree {
			text += " (its worktree is being checked out)"
		}
		if r := opts.route; r != nil {
			// A definition picked the model: say which, so the person
			// (and the model) know the child does not run on the
			// parent's.
			text += fmt.Sprintf(" on model %s/%s", r.Provider, r.Model)
		}
		res := tool.TextResult(text, delegation.ContinuableResult(childID))
		res.Display = childDisplay(childID, ModeContinuable, depth)
		return withCap(res), nil
	}
	res, err := d.foreground(ctx, inv, caller, args.Description, prompt, opts, iso)
	if err != nil {
		return res, err
	}
	return withCap(res), nil
}

func (d *Delegation) foreground(ctx context.Context, inv tool.Invocation, caller *agent.Agent, label string, prompt []session.Block, opts childOptions, iso Isolation) (tool.Result, error) {
	obs := d.watchForeground(inv)
	if obs.rep != nil {
		defer obs.rep.stop()
	}
	rep, onUpdate := obs.rep, obs.onUpdate
	run, wt, err := d.svc.StartIsolated(ctx, d.providerFor(opts), OneShotRequest{
		Label: label, CallID: inv.CallID, Prompt: prompt, Parent: caller, Route: opts.route, MaxDepth: d.cfg.MaxDepth,
		ToolFilter: opts.toolFilter, Persona: opts.persona, MaxSteps: opts.maxSteps, Definition: opts.definition, Limits: opts.limits,
		PermissionMode: opts.permissionMode, PermissionScope: opts.permissionScope, Isolation: iso,
		OnUpdate: onUpdate,
	})
	if err != nil {
		return tool.Result{}, err
	}
	// The run settles on its own once ctx is cancelled (the provider
	// cancels the child), so wait without ctx; always dispose.
	res, runErr := run.Result(context.WithoutCancel(ctx))
	account, spent := obs.account(d)
	disposeErr := run.Dispose(context.WithoutCancel(ctx))
	// The child is closed: its worktree, if any, is removed when
	// untouched, kept and reported otherwise, whatever the outcome.
	tree := d.svc.SettleWorktree(ctx, run.ID, wt, Work{Label: label, Output: res.Output, Stop: res.StopReason})
	// Every outcome names the child: the link is recorded with the result,
	// so a replay of the parent shows it too (failures included), and the
	// final digest of what the child did goes with it.
	display := childDisplay(run.ID, ModeOneShot, run.Depth)
	if rep != nil {
		stop := res.StopReason
		if runErr != nil || disposeErr != nil {
			stop = driver.StopError
		}
		display.Text = rep.finish(stop, tree)
	}
	fail := func(err *tool.Error) (tool.Result, error) {
		if tree != nil {
			err.Message += "\n" + worktreeNotice(tree).Text
		}
		out := tool.ErrorResult(err)
		out.Display = display
		if spent != nil && out.Raw == nil {
			// What the failed child spent still counts for its parent; the
			// error stays where a failed call's raw output has it.
			out.Raw = map[string]any{"error": out.Error, "kind": delegation.ResultForeground, "runId": run.ID, "usage": spent}
		}
		return out, nil
	}
	switch {
	case runErr != nil && disposeErr != nil:
		return fail(&tool.Error{
			Code:    CodeSubagentRunFailed,
			Message: fmt.Sprintf("subagent run failed: %v; dispose failed: %v", runErr, disposeErr),
			Err:     errors.Join(runErr, disposeErr),
		})
	case runErr != nil:
		return fail(&tool.Error{Code: CodeSubagentRunFailed, Message: fmt.Sprintf("subagent run failed: %v", runErr), Err: runErr})
	case disposeErr != nil:
		return fail(&tool.Error{Code: CodeSubagentRunFailed, Message: fmt.Sprintf("dispose failed: %v", disposeErr), Err: disposeErr})
	}
	if res.StopReason == driver.StopCompleted {
		raw := delegation.ForegroundResult(run.ID, res.Output)
		if spent != nil {
			raw["usage"] = spent // the child and its descendants, for the parent's usage display
		}
		out := tool.TextResult(session.JoinText(res.Output, ""), raw)
		out.Content = append(out.Content, account...)
		if tree != nil {
			out.Content = append(out.Content, worktreeNotice(tree))
			raw["worktree"] = worktreeRaw(tree)
		}
		out.Display = display
		return out, nil
	}
	msg := ForegroundFailure(res)
	if text := session.JoinText(account, "\n"); text != "" {
		msg += "\n" + text
	}
	return fail(&tool.Error{Code: CodeSubagentRunFailed, Message: msg})
}

// foregroundWatch follows a foreground child's updates: the child itself
// (for its account once its run is over) and, when the call reports
// progress, its live digest linked to the call.
type foregroundWatch struct {
	rep      *digestReporter
	onUpdate func(*agent.Agent, agent.Update)
	mu       sync.Mutex
	child    *agent.Agent
}

// watchForeground starts following a foreground child for inv. The
// caller stops rep (when set) once the child is done.
func (d *Delegation) watchForeground(inv tool.Invocation) *foregroundWatch {
	w := &foregroundWatch{}
	seen := func(c *agent.Agent) {
		w.mu.Lock()
		w.child = c
		w.mu.Unlock()
	}
	w.onUpdate = func(c *agent.Agent, _ agent.Update) { seen(c) }
	if inv.Progress != nil {
		// The link names the child once it exists (its first update).
		var once sync.Once
		report := inv.Progress
		w.rep = newDigestReporter(d.svc.digest, true, nil, nil)
		rep := w.rep
		w.onUpdate = func(child *agent.Agent, u agent.Update) {
			once.Do(func() {
				meta := childLinkMeta(child.ID(), ModeOneShot, child.Session().Header().DelegationDepth)
				rep.setLink(meta, report)
			})
			seen(child)
			rep.observe(child, u)
		}
	}
	return w
}

// account is what the child spent, as its result states it and as
// figures (nil when it never started).
func (w *foregroundWatch) account(d *Delegation) ([]session.Block, *budget.Usage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.child == nil {
		return nil, nil
	}
	evs, _ := w.child.Session().Events()
	return d.svc.kids.spend.account(w.child, evs)
}

// ForegroundFailure renders a non-completed foreground result:
// headline, optional diagnostic, optional partial output. A failed run's
// headline carries its cause: "subagent run failed: <the child's error>".
func ForegroundFailure(res driver.Result) string {
	var b strings.Builder
	diagnostic := res.Diagnostic
	switch res.StopReason {
	case driver.StopAborted:
		b.WriteString("subagent run was cancelled")
	case driver.StopError:
		b.WriteString("subagent run failed")
		if diagnostic != "" {
			b.WriteString(": " + diagnostic)
			diagnostic = ""
		}
	case driver.StopMaxTokens:
		b.WriteString("subagent run hit its token limit before finishing")
	case driver.StopRefusal:
		b.WriteString("subagent declined the task")
	case driver.StopMaxTurns:
		b.WriteString("subagent run reached its turn limit (maxTurns) before finishing")
	case driver.StopBudget:
		b.WriteString("subagent run reached its budget before finishing (stop reason budget)")
	case driver.StopTimeout:
		b.WriteString("subagent run ran out of time before finishing (stop reason timeout)")
	default:
		fmt.Fprintf(&b, "subagent run ended abnormally (%s)", res.StopReason)
	}
	if diagnostic != "" {
		b.WriteString("\nDiagnostic: " + diagnostic)
	}
	if text := session.JoinText(res.Output, ""); text != "" {
		b.WriteString("\nPartial output before the run ended:\n" + text)
	}
	return b.String()
}

// progress builds a tool progress report carrying the child link.
func progress(text, childID string, mode Mode, depth int) tool.Progress {
	return tool.Progress{Text: text, Meta: childLinkMeta(childID, mode, depth)}
}

// childLinkMeta is the _meta a delegation's tool call carries, live (on
// progress) and durably (on its result's display), so editors can follow
// the call to its child session: {"acp-agent/subagent": {childSessionId,
// mode, depth}}.
func childLinkMeta(childID string, mode Mode, depth int) map[string]any {
	return delegation.ChildLink(childID, string(mode), depth)
}

// childDisplay records the child link with a delegation's result.
func childDisplay(childID string, mode Mode, depth int) *session.ToolDisplay {
	return &session.ToolDisplay{Meta: childLinkMeta(childID, mode, depth)}
}

// writeTools are the tools that change files: a child with none of them
// (or in plan mode) cannot write.
var writeTools = []string{"edit", "write", "bash"}

// canWrite reports whether a child with this permission mode and tool
// filter can change files.
func canWrite(mode string, f *ToolFilter) bool {
	if mode == string(policy.ModePlan) {
		return false
	}
	if f == nil {
		return true
	}
	for _, t := range writeTools {
		allowed := len(f.Allow) == 0 || slices.Contains(f.Allow, t)
		if allowed && !slices.Contains(f.Deny, t) {
			return true
		}
	}
	return false
}
