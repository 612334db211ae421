package cli

// This file defines "acp-agent exec": one prompt without an editor, for
// scripts and CI. It is not a second agent: it builds the same composition
// serving builds (serveConfig, New), runs its real ACP server in process
// over a pair of pipes, and drives it as an editor would with the headless
// client (package headless), answering permission questions by --ask.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model/recording/live"
	"github.com/acp-agent/acp-agent/agent/settings"
	"github.com/acp-agent/acp-agent/app"
	"github.com/acp-agent/acp-agent/app/headless"
)

// Environment variables of exec's own flags (a flag wins over its
// variable).
const (
	EnvExecResume       = "ACP_AGENT_EXEC_RESUME"
	EnvExecCwd          = "ACP_AGENT_EXEC_CWD"
	EnvExecOutput       = "ACP_AGENT_EXEC_OUTPUT"
	EnvExecMode         = "ACP_AGENT_EXEC_MODE"
	EnvExecAsk          = "ACP_AGENT_EXEC_ASK"
	EnvExecMCPConfig    = "ACP_AGENT_MCP_CONFIG"
	EnvExecWaitChildren = "ACP_AGENT_EXEC_WAIT_CHILDREN"
	EnvExecRecord       = "ACP_AGENT_EXEC_RECORD"
)

// ExitCodeError ends a command with Code; Err, when set, is printed.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitCodeError) Unwrap() error { return e.Err }

// execOptions are exec's own flags.
type execOptions struct {
	resume, cwd, output, mode, ask, mcpConfig, record string
	waitChildren, bare                                bool
	// Limits (0: none): the tree's cost, the turn's model requests, the
	// turn's wall time.
	maxBudgetUSD float64
	maxTurns     int
	timeout      time.Duration
}

func execCommand() Command {
	var o execOptions
	return Command{
		Name:    "exec",
		Summary: "run one prompt without an editor and print the answer (scripts and CI)",
		Usage:   "exec [flags] [PROMPT | -]",
		Description: `Runs PROMPT (or stdin, when PROMPT is - or absent and stdin is not a
terminal) as one turn of a new session, or of the session --resume names,
with the same model, settings, agent definitions, MCP servers and subagents
as an editor's session, and exits when the turn (and every foreground
subagent) is done; --wait-children also waits for background subagents to
settle. The answer goes to stdout (--output jsonl: every session/update as
one JSON line); progress goes to stderr when it is a terminal.

Nobody is asked for permission: --mode and the settings rules decide, and a
question neither answers is refused (--ask deny, the default) or allowed
(--ask allow); each refusal is reported. SIGINT cancels the turn like
session/cancel; a second SIGINT exits at once.

Limits: --max-turns bounds the model requests of the turn, --max-budget-usd
what the session and all its subagents may spend (list prices, where the
model's price is known), --timeout the turn's wall time. Reaching one ends
the turn with the limit's stop reason (max-steps, budget, timeout), said on
stderr.

--output jsonl ends with one result line: {"type":"result", sessionId,
outcome, exitStatus, stopReason, turns, durationMs, usage, models,
children}. --bare ignores the user's settings, agent definitions, skills
and instructions file. Piped stdin with a PROMPT is added as context.

Exit status: 0 done, 1 failed (provider error, turn failed, or a failed
subagent with --wait-children), 2 usage, 3 refused (a permission question
was refused, or the model refused), cancelled (SIGINT, SIGTERM, SIGHUP,
stdout closed) or stopped early (max_tokens), 4 a limit was reached
(--max-turns, --max-budget-usd, --timeout or a limit of the settings). The
cause of every failure, a subagent's too, is said on stderr. See
docs/exec.md.`,
		Examples: []string{
			`acp-agent exec --model deepseek/deepseek-chat "Summarize README.md"`,
			`git diff | acp-agent exec --mode plan - > review.txt`,
			`acp-agent exec --output jsonl --mode accept-edits "Fix the failing test"`,
			`acp-agent exec --resume SESSION_ID "And now the docs"`,
		},
		Common: []string{CommonDataDir, CommonModel, CommonBaseURL, CommonAPIKeyEnv, CommonLogLevel, CommonSandbox,
			CommonContextWindow, CommonCompactThreshold, CommonIdleTimeout, CommonMaxBackground},
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.resume, "resume", "", "continue the stored session `ID` instead of starting one (env "+EnvExecResume+")")
			fs.StringVar(&o.cwd, "cwd", "", "working `DIR` of a new session (default the current directory; env "+EnvExecCwd+")")
			fs.StringVar(&o.output, "output", "", "`FORMAT` of stdout: text (the answer) or jsonl (each session/update params as one JSON line) (default text; env "+EnvExecOutput+")")
			fs.StringVar(&o.mode, "mode", "", "session `MODE`: default, accept-edits, plan or bypass (default: a new session's default, a resumed session's own; env "+EnvExecMode+")")
			fs.StringVar(&o.ask, "ask", "", "`ANSWER` to a permission question no mode or rule decides: deny or allow (default deny; env "+EnvExecAsk+")")
			fs.StringVar(&o.mcpConfig, "mcp-config", "", "MCP servers: a `FILE` or inline JSON holding what an editor sends as session/new's mcpServers (an array, or an object with an mcpServers array) (env "+EnvExecMCPConfig+")")
			fs.StringVar(&o.record, "record", "", "record the session as a keyless scenario in `DIR` (model replies, the prompt, the files it read; secrets redacted), for acp-agent scenario test --dir (env "+EnvExecRecord+")")
			fs.Float64Var(&o.maxBudgetUSD, "max-budget-usd", 0, "stop when the session and its subagents have spent `USD` at list prices (models with a known price only; exit status 4)")
			fs.IntVar(&o.maxTurns, "max-turns", 0, "stop the turn after `N` model requests (exit status 4)")
			fs.DurationVar(&o.timeout, "timeout", 0, "stop the turn after `DURATION` (\"90s\", \"10m\"; exit status 4)")
			fs.BoolVar(&o.bare, "bare", false, "ignore the user settings, the user's agent definitions and skills, and the user instructions file (AGENTS.md): a run that does not depend on the machine (the project's files still apply)")
			fs.BoolVar(&o.waitChildren, "wait-children", false, "also wait for the session's background subagents to settle, and the turns their results start (env "+EnvExecWaitChildren+": 1/0, true/false, yes/no or on/off)")
		},
		Run: func(ctx context.Context, env *Env, args []string) error { return runExec(ctx, env, o, args) },
	}
}

// fromEnv fills the flags not given from their variables.
func (o *execOptions) fromEnv(getenv func(string) string) error {
	for _, f := range []struct {
		v   *string
		env string
	}{{&o.resume, EnvExecResume}, {&o.cwd, EnvExecCwd}, {&o.output, EnvExecOutput}, {&o.mode, EnvExecMode}, {&o.ask, EnvExecAsk}, {&o.mcpConfig, EnvExecMCPConfig}, {&o.record, EnvExecRecord}} {
		if *f.v == "" {
			*f.v = getenv(f.env)
		}
	}
	if v := getenv(EnvExecWaitChildren); v != "" && !o.waitChildren {
		b, err := parseBool(v)
		if err != nil {
			return usageErrorf("%s=%q: %v", EnvExecWaitChildren, v, err)
		}
		o.waitChildren = b
	}
	return nil
}

func (o *execOptions) check() error {
	if o.maxBudgetUSD < 0 || math.IsNaN(o.maxBudgetUSD) || math.IsInf(o.maxBudgetUSD, 0) {
		return usageErrorf("--max-budget-usd %v: want a positive amount", o.maxBudgetUSD)
	}
	if o.maxTurns < 0 {
		return usageErrorf("--max-turns %d: want a positive number", o.maxTurns)
	}
	if o.timeout < 0 {
		return usageErrorf("--timeout %s: want a positive duration", o.timeout)
	}
	switch o.output {
	case "":
		o.output = headless.OutputText
	case headless.OutputText, headless.OutputJSONL:
	default:
		return usageErrorf("--output %q: want text or jsonl", o.output)
	}
	switch o.ask {
	case "":
		o.ask = headless.AskDeny
	case headless.AskDeny, headless.AskAllow:
	default:
		return usageErrorf("--ask %q: want deny or allow", o.ask)
	}
	switch o.mode {
	case "", acp.ModeDefault, acp.ModeAcceptEdits, acp.ModePlan, acp.ModeBypass:
	default:
		return usageErrorf("--mode %q: want %s, %s, %s or %s", o.mode, acp.ModeDefault, acp.ModeAcceptEdits, acp.ModePlan, acp.ModeBypass)
	}
	return nil
}

// execPrompt is the prompt: the one argument, or stdin for "-" or none
// (unless stdin is a terminal: nobody would know it waits).
func execPrompt(env *Env, args []string) (string, error) {
	if len(args) > 1 {
		return "", usageErrorf("want one PROMPT (quote it), got %d arguments", len(args))
	}
	text := ""
	if len(args) == 1 && args[0] != "-" {
		text = args[0]
		if piped(env.Stdin) {
			// A prompt and piped input: the input is context for the
			// prompt (git diff | acp-agent exec "Review this").
			b, err := io.ReadAll(env.Stdin)
			if err != nil {
				return "", fmt.Errorf("read stdin: %w", err)
			}
			if strings.TrimSpace(string(b)) != "" {
				text += "\n\n<stdin>\n" + strings.TrimRight(string(b), "\n") + "\n</stdin>"
			}
		}
	} else {
		if len(args) == 0 && isTerminal(env.Stdin) {
			return "", usageErrorf("no prompt: give it as an argument, or on stdin with - or a pipe")
		}
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return "", usageErrorf("the prompt is empty")
	}
	return text, nil
}

// piped reports whether stdin carries input to read: a pipe or a file;
// not a terminal nor a device such as /dev/null. A reader that is not a
// file (tests, embedders) counts as piped.
func piped(r io.Reader) bool {
	file, ok := r.(*os.File)
	if !ok {
		return r != nil
	}
	st, err := file.Stat()
	if err != nil {
		return false
	}
	m := st.Mode()
	return m&os.ModeNamedPipe != 0 || m.IsRegular()
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// loadMCPConfig reads --mcp-config: inline JSON or a file, holding an
// mcpServers array (or an object with one). The agent checks each server
// as it checks an editor's.
func loadMCPConfig(v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	data := []byte(strings.TrimSpace(v))
	if len(data) == 0 || (data[0] != '[' && data[0] != '{') {
		var err error
		if data, err = os.ReadFile(v); err != nil {
			return nil, usageErrorf("--mcp-config: %v", err)
		}
		data = bytes.TrimSpace(data)
	}
	if len(data) > 0 && data[0] == '{' {
		var wrapped struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &wrapped); err != nil || wrapped.MCPServers == nil {
			return nil, usageErrorf("--mcp-config: want a JSON array of MCP servers or an object with an mcpServers array")
		}
		data = wrapped.MCPServers
	}
	var servers []map[string]json.RawMessage
	if err := json.Unmarshal(data, &servers); err != nil {
		return nil, usageErrorf("--mcp-config: want a JSON array of MCP servers (as in session/new's mcpServers): %v", err)
	}
	return data, nil
}

func runExec(ctx context.Context, env *Env, o execOptions, args []string) error {
	// Signals from the start: one that comes before the session exists
	// ends the run cleanly too (exit 3), not the process mid-setup.
	cancel, stopSignals := cancelOnSignal(env)
	defer stopSignals()
	started := time.Now()
	if err := o.fromEnv(env.Getenv); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	servers, err := loadMCPConfig(o.mcpConfig)
	if err != nil {
		return err
	}
	cwd, err := execCwd(o.cwd)
	if err != nil {
		return err
	}
	text, err := execPrompt(env, args)
	if err != nil {
		return err
	}
	cfg, rec, err := execConfig(env, &o, cwd)
	if err != nil {
		return err
	}
	a, err := app.New(cfg)
	if err != nil {
		return asUsage(err)
	}
	defer a.Close()
	if a.ModelErr != nil {
		return &UsageError{Err: a.ModelErr}
	}
	if o.resume == "" {
		// A missing key fails the prompt: say so before a session is
		// created, so none is left behind.
		if err := a.KeyReady(); err != nil {
			return &UsageError{Err: err}
		}
	}
	if rec != nil {
		defer rec.Observe(a.Sessions)()
	}

	// A reader of stdout that went away (exec ... | head) ends the run as
	// a signal does; nothing more is written there.
	stdout := &brokenPipe{w: env.Stdout, broken: make(chan struct{})}
	ran := make(chan struct{})
	res, err := a.Exec(ctx, headless.Options{
		Prompt: text, Cwd: cwd, Resume: o.resume, MCPServers: servers,
		Mode: o.mode, Ask: o.ask, Output: o.output,
		Stdout: stdout, Stderr: env.Stderr, Progress: env.Process.stderrTerminal(env.Stderr),
		Cancel: anyOf(ran, cancel, stdout.broken),
	}, o.waitChildren)
	close(ran)
	var recErr error
	if rec != nil {
		recErr = rec.Write(live.ExecRun{
			Prompt: text, Mode: o.mode, Answers: res.Answers, SessionID: res.SessionID,
			WaitChildren: o.waitChildren, MCPServers: servers, ContextWindow: a.Config.ContextWindow,
			Failed: err != nil, Cancelled: err == nil && res.StopReason == "cancelled", MaxTurns: o.maxTurns,
		}, env.Stderr)
	}
	st := execStatus(res, err, o.waitChildren)
	for _, ch := range res.Report.Children {
		if ch.Outcome == app.ChildFailed {
			fmt.Fprintf(env.Stderr, "acp-agent: subagent %s failed: %s\n", childName(ch), ch.Error)
		}
	}
	if o.output == headless.OutputJSONL && res.Started {
		writeResultLine(stdout, res, st, time.Since(started))
	}
	return errors.Join(st.err, recErr, a.Close())
}

// execCwd is the absolute working directory of a run (--cwd, or the
// process's own), which must be a directory.
func execCwd(flag string) (string, error) {
	cwd := flag
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return "", usageErrorf("--cwd: %v", err)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return "", usageErrorf("--cwd %s: not a directory", cwd)
	}
	return cwd, nil
}

// execConfig is the composition of a run in cwd: the serving
// configuration with --bare, --record (whose recorder it returns, nil
// without) and the limit flags applied. --record makes the run wait for
// its children (o.waitChildren).
func execConfig(env *Env, o *execOptions, cwd string) (app.Config, *live.Exec, error) {
	cfg, err := serveConfig(env)
	if err != nil {
		return cfg, nil, err
	}
	if o.bare {
		// Nothing of the user's: settings (rules, environment, sandbox,
		// prices), agent definitions, skills, instructions file.
		cfg.SettingsFile = ""
		cfg.Prompt.UserInstructions = "-"
		cfg.Sandbox = app.SandboxPolicy(env.Flags.Sandbox, settings.Load("", "").Sandbox())
	}
	var rec *live.Exec
	if o.record != "" {
		if o.resume != "" {
			return cfg, nil, usageErrorf("--record starts a new session: it cannot be combined with --resume")
		}
		if rec, err = live.NewExec(o.record, cwd); err != nil {
			return cfg, nil, &UsageError{Err: err}
		}
		cfg.WrapModel = rec.WrapModel(live.SecretValues(cfg.APIKeyEnv, env.Getenv, os.Environ()), cfg.WrapModel)
		cfg.WrapWorkspace = rec.WrapWorkspace(cfg.WrapWorkspace)
		cfg.EstimateTokens = rec.EstimateTokens()
		// A recording ends settled: a background child cut off by the
		// shutdown would race with it on every replay.
		o.waitChildren = true
	}
	if o.maxBudgetUSD > 0 {
		cfg.TreeMaxCostUSD = o.maxBudgetUSD
	}
	if o.maxTurns > 0 {
		cfg.MaxSteps = o.maxTurns
	}
	if o.timeout > 0 {
		cfg.TurnTimeout = o.timeout
	}
	return cfg, rec, nil
}

// childName names a subagent for people: its label and id.
func childName(ch app.ExecChild) string {
	if ch.Label != "" {
		return fmt.Sprintf("%q (%s)", ch.Label, ch.SessionID)
	}
	return ch.SessionID
}

// brokenPipe is stdout that, once a write failed (the reader went away:
// EPIPE), closes broken and drops every later write.
type brokenPipe struct {
	w      io.Writer
	broken chan struct{}
	mu     sync.Mutex
	failed bool
}

func (b *brokenPipe) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failed {
		return len(p), nil
	}
	if _, err := b.w.Write(p); err != nil {
		b.failed = true
		close(b.broken)
	}
	return len(p), nil
}

// anyOf closes its result when a or b is closed; its goroutine ends
// then, or when done is closed (the run is over).
func anyOf(done, a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		case <-done:
			return
		}
		close(out)
	}()
	return out
}

// cancelOnSignal closes cancel at the first SIGINT, SIGTERM, SIGHUP or
// SIGPIPE, which cancels the turn, and exits at once with ExitRefused at
// a second SIGINT or SIGTERM (a broken pipe repeats on its own: it only
// cancels). stop ends the subscription and its goroutine.
func cancelOnSignal(env *Env) (cancel <-chan struct{}, stop func()) {
	cancelled := make(chan struct{})
	sigc := make(chan os.Signal, 4)
	env.Process.notify(sigc)
	sigDone := make(chan struct{})
	go func() {
		select {
		case <-sigc:
			close(cancelled)
		case <-sigDone:
			return
		}
		for {
			select {
			case sig := <-sigc:
				if sig == syscall.SIGPIPE {
					continue
				}
				fmt.Fprintln(env.Stderr, "acp-agent: interrupted again: exiting now")
				env.Process.exit(ExitRefused)
				return
			case <-sigDone:
				return
			}
		}
	}()
	return cancelled, func() {
		close(sigDone)
		env.Process.stop(sigc)
	}
}

// Outcomes of the result line.
const (
	outcomeDone      = "done"
	outcomeFailed    = "failed"
	outcomeUsage     = "usage"
	outcomeRefused   = "refused"
	outcomeCancelled = "cancelled"
	outcomeStopped   = "stopped"
	outcomeLimit     = "limit"
)

// runStatus is how a run ended for its exit status and result line.
type runStatus struct {
	code    int
	outcome string
	// err is what the command returns (printed on stderr); nil when done.
	err error
}

// execStatus maps how the run ended to exec's exit status: a failed
// subagent fails a run that waited for its children.
func execStatus(res app.ExecResult, err error, waitChildren bool) runStatus {
	st := execOutcome(res.Result, err)
	if st.code == ExitOK && waitChildren {
		for _, ch := range res.Report.Children {
			if ch.Outcome == app.ChildFailed {
				return runStatus{ExitError, outcomeFailed, &ExitCodeError{Code: ExitError, Err: fmt.Errorf("subagent %s failed (session %s)", childName(ch), res.SessionID)}}
			}
		}
	}
	return st
}

// execOutcome maps how the turn ended to exec's exit status.
func execOutcome(res headless.Result, err error) runStatus {
	var re *headless.RPCError
	switch {
	case errors.As(err, &re):
		switch acp.Code(re.DataErr) {
		case acp.CodeUnknownSession, acp.CodeInvalidSessionID, acp.CodeInvalidParams, acp.CodeReadOnlySession,
			acp.CodeModelNotConfigured, acp.CodeAuthRequired, acp.CodeUnsupportedContent:
			return runStatus{ExitUsage, outcomeUsage, &UsageError{Err: err}}
		case acp.CodeSessionLocked, acp.CodePromptInFlight:
			return runStatus{ExitError, outcomeFailed, err}
		}
		if re.Code == -32602 {
			return runStatus{ExitUsage, outcomeUsage, &UsageError{Err: err}}
		}
		return runStatus{ExitError, outcomeFailed, err}
	case err != nil:
		return runStatus{ExitError, outcomeFailed, err}
	}
	if res.Limit != "" {
		detail := ""
		if res.LimitDetail != "" {
			detail = ": " + res.LimitDetail
		}
		return runStatus{ExitLimit, outcomeLimit, &ExitCodeError{Code: ExitLimit, Err: fmt.Errorf("the turn reached a limit (stop reason %s)%s (session %s)", res.Limit, detail, res.SessionID)}}
	}
	session := ""
	if res.SessionID != "" {
		session = " (session " + res.SessionID + ")"
	}
	switch res.StopReason {
	case "end_turn":
		if res.Refused > 0 {
			return runStatus{ExitRefused, outcomeRefused, &ExitCodeError{Code: ExitRefused, Err: fmt.Errorf("%d permission question(s) refused%s", res.Refused, session)}}
		}
		return runStatus{ExitOK, outcomeDone, nil}
	case "cancelled":
		if res.SessionID == "" {
			return runStatus{ExitRefused, outcomeCancelled, &ExitCodeError{Code: ExitRefused, Err: errors.New("cancelled before the session was created: nothing was run")}}
		}
		return runStatus{ExitRefused, outcomeCancelled, &ExitCodeError{Code: ExitRefused, Err: fmt.Errorf("the turn was cancelled%s", session)}}
	case "refusal":
		return runStatus{ExitRefused, outcomeRefused, &ExitCodeError{Code: ExitRefused, Err: fmt.Errorf("the model refused%s", session)}}
	case "max_tokens":
		return runStatus{ExitRefused, outcomeStopped, &ExitCodeError{Code: ExitRefused, Err: fmt.Errorf("the turn stopped early: the model's reply was cut at its output limit (max_tokens)%s", session)}}
	case "max_turn_requests":
		return runStatus{ExitLimit, outcomeLimit, &ExitCodeError{Code: ExitLimit, Err: fmt.Errorf("the turn reached a limit (stop reason max_turn_requests)%s", session)}}
	}
	return runStatus{ExitError, outcomeFailed, &ExitCodeError{Code: ExitError, Err: fmt.Errorf("the turn stopped early: %s%s", res.StopReason, session)}}
}

// resultLine is the last line of --output jsonl.
type resultLine struct {
	Type       string           `json:"type"`
	SessionID  string           `json:"sessionId"`
	Outcome    string           `json:"outcome"`
	ExitStatus int              `json:"exitStatus"`
	StopReason string           `json:"stopReason,omitempty"`
	Limit      string           `json:"limit,omitempty"`
	Error      string           `json:"error,omitempty"`
	Turns      int              `json:"turns"`
	DurationMs int64            `json:"durationMs"`
	Usage      budget.Usage     `json:"usage"`
	Models     []app.ModelUsage `json:"models"`
	Own        budget.Usage     `json:"sessionUsage"`
	Children   []app.ExecChild  `json:"children"`
	Refused    int              `json:"refused,omitempty"`
}

// writeResultLine ends --output jsonl with the run's result.
func writeResultLine(w io.Writer, res app.ExecResult, st runStatus, took time.Duration) {
	line := resultLine{
		Type: "result", SessionID: res.SessionID, Outcome: st.outcome, ExitStatus: st.code,
		StopReason: res.StopReason, Limit: res.Limit, Turns: res.Report.Turns, DurationMs: took.Milliseconds(),
		Usage: res.Report.Usage, Models: res.Report.Models, Own: res.Report.Own, Children: res.Report.Children, Refused: res.Refused,
	}
	if line.Models == nil {
		line.Models = []app.ModelUsage{}
	}
	if line.Children == nil {
		line.Children = []app.ExecChild{}
	}
	if st.err != nil {
		line.Error = st.err.Error()
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	w.Write(append(b, '\n'))
}
