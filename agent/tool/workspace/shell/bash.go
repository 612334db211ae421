package shell

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/tool"
	"github.com/acp-agent/acp-agent/agent/tool/workspace"
)

// ToolName is the name of the tool, as models expect it.
const ToolName = "bash"

// Limits of `bash`.
const (
	DefaultTimeout = 2 * time.Minute
	MaxTimeout     = 10 * time.Minute
	// OutputLimit is the bytes of output kept (the tail).
	OutputLimit = 30000
)

// CodeCommandTimedOut: the command ran past its timeout and was stopped.
const CodeCommandTimedOut = "COMMAND_TIMED_OUT"

const (
	bashParameters = `{"type":"object","properties":{` +
		`"command":{"type":"string","description":"The command line to run with bash -c."},` +
		`"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"Milliseconds before the command is stopped. Default 120000 (2 minutes), at most 600000 (10 minutes)."},` +
		`"description":{"type":"string","description":"A short description of what the command does, in a few words, shown to the user."},` +
		`"sandbox":{"type":"boolean","description":"Where commands run in a sandbox (the result says so), false asks the user to run this one outside it; use it only after a sandboxed run failed because of the sandbox. Default true."}` +
		`},"required":["command"],"additionalProperties":false}`
	bashDescription = "Run a shell command with bash -c in the working directory and return its combined stdout and " +
		"stderr, with its exit code. The user is asked to approve each command. Each call starts a fresh shell (cd and " +
		"variables do not carry over; chain commands with && instead), stdin is empty, and nothing interactive works. " +
		"The command is stopped after the timeout (default 2 minutes, at most 10), and background processes it starts " +
		"are stopped when it ends. Only the last 30000 bytes of output are returned, so filter long output (for example " +
		"with grep, head or tail). Prefer the read, edit, write, glob and grep tools for files."
)

var bashDescribed = workspace.Describe(ToolName, bashDescription, bashParameters, workspace.KindExecute)

// Bash is the `bash` tool.
type Bash struct {
	workspace.Described
	r workspace.Resolver
}

// NewBash returns `bash` over r.
func NewBash(r workspace.Resolver) *Bash { return &Bash{bashDescribed, r} }

// Tools returns `bash` over r.
func Tools(r workspace.Resolver) []tool.Tool { return []tool.Tool{NewBash(r)} }

// Output is the raw output of `bash`.
type Output struct {
	ExitCode   *int   `json:"exitCode,omitempty"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	TerminalID string `json:"terminalId,omitempty"`
	Sandbox    string `json:"sandbox,omitempty"`
	// Quarantined are the protected paths the sandboxed command created,
	// moved aside as they appeared or when it was over.
	Quarantined []workspace.MovedPath `json:"quarantined,omitempty"`
	GuardError  string                `json:"guardError,omitempty"`
}

// Execute asks to run the command, then runs it.
func (t *Bash) Execute(ctx context.Context, inv tool.Invocation) (tool.Result, error) {
	var args struct {
		Command     string `json:"command"`
		Timeout     int64  `json:"timeout"`
		Description string `json:"description"`
		Sandbox     *bool  `json:"sandbox"`
	}
	if err := workspace.DecodeArgs(inv.Arguments, &args); err != nil {
		return tool.Result{}, err
	}
	if strings.TrimSpace(args.Command) == "" {
		return tool.Result{}, workspace.InvalidArgs("command is empty")
	}
	timeout := DefaultTimeout
	if args.Timeout > 0 {
		timeout = min(time.Duration(args.Timeout)*time.Millisecond, MaxTimeout)
	}
	env, err := workspace.EnvFor(ctx, t.r, inv)
	if err != nil {
		return tool.Result{}, err
	}
	if env.Commands == nil {
		return tool.Result{}, &tool.Error{Code: workspace.CodeNoWorkspace, Message: "running commands is not available"}
	}
	unsandboxed := args.Sandbox != nil && !*args.Sandbox
	hasSandbox := workspace.SandboxOf(env.Commands, env.Cwd) != ""
	sandboxed := !unsandboxed && hasSandbox
	shown := title(args.Command)
	if unsandboxed && hasSandbox {
		// The question must not look like the sandboxed one.
		shown = UnsandboxedTitlePrefix + shown
	}
	err = workspace.Authorize(ctx, env.Permissions, workspace.PermissionRequest{
		CallID: inv.CallID, Tool: ToolName, Kind: workspace.KindExecute, Title: shown,
		Subject: args.Command, Detail: detail(args.Description, args.Command),
		Sandboxed: sandboxed, SandboxKeepsProtected: sandboxed && workspace.SandboxKeepsProtected(env.Commands, env.Cwd),
	})
	if err != nil {
		return workspace.Failed(err, nil), nil
	}
	show := func(d session.ToolDisplay) {
		if inv.Progress != nil {
			inv.Progress(tool.Progress{Display: &d})
		}
	}
	res, err := env.Commands.Run(ctx, workspace.Command{
		CallID: inv.CallID, Command: args.Command, Cwd: env.Cwd, Timeout: timeout, OutputLimit: OutputLimit,
		Unsandboxed: unsandboxed,
	}, show)
	var display *session.ToolDisplay
	if res.TerminalID != "" {
		display = &session.ToolDisplay{TerminalID: res.TerminalID}
	}
	if err != nil {
		return workspace.Failed(err, display), nil
	}
	out := Output{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Truncated: res.Truncated, TerminalID: res.TerminalID, Sandbox: res.Sandbox,
		Quarantined: res.Quarantined, GuardError: res.GuardError}
	body := render(res, timeout)
	if res.TimedOut {
		r := workspace.Failed(&tool.Error{Code: CodeCommandTimedOut, Message: body}, display)
		r.Raw = out
		return r, nil
	}
	r := tool.TextResult(body, out)
	r.Display = display
	return r, nil
}

// titleMax is the runes of a command shown in a permission title.
const titleMax = 120

// title is what the permission prompt shows: the exact command line (never
// the model's description, which could word its way past the person),
// escaped and shortened with an ellipsis; the whole command is in detail.
// UnsandboxedTitlePrefix starts the title of a command the model asked to
// run outside the sandbox.
const UnsandboxedTitlePrefix = "Outside the sandbox: "

func title(command string) string { return workspace.CommandTitle(command, titleMax) }

// detail is the request's content: the whole command as a code block,
// then the model's description as secondary text.
func detail(description, command string) string {
	fence := "```"
	for strings.Contains(command, fence) {
		fence += "`"
	}
	d := fence + "sh\n" + command + "\n" + fence
	if desc := strings.TrimSpace(description); desc != "" {
		d += "\n\n" + desc
	}
	return d
}

// render is the model-facing text: the output tail, then how it ended.
func render(res workspace.CommandResult, timeout time.Duration) string {
	var b strings.Builder
	if res.Truncated {
		fmt.Fprintf(&b, "[Output cut: only the last %d bytes are shown.]\n", len(res.Output))
	}
	if res.Output == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(res.Output)
		if !strings.HasSuffix(res.Output, "\n") {
			b.WriteByte('\n')
		}
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "[The command timed out after %s and was stopped with its processes.]", timeout)
	case res.ExitCode != nil:
		fmt.Fprintf(&b, "[Exit code %d]", *res.ExitCode)
	case res.Signal != "":
		fmt.Fprintf(&b, "[Killed by signal: %s]", res.Signal)
	}
	if res.Sandbox != "" && (res.ExitCode == nil || *res.ExitCode != 0) {
		fmt.Fprintf(&b, "\n[The command ran in a sandbox (%s). If it failed because of the sandbox (\"Permission denied\" or \"Read-only file system\" on a write outside those directories, \"Network is unreachable\" and the like), run it again with \"sandbox\": false to ask the user to run it outside the sandbox.]", strings.TrimPrefix(res.Sandbox, "sandboxed: "))
	}
	if len(res.Quarantined) > 0 {
		b.WriteString("\n[The command created protected paths, which a sandboxed command may not write (git and the editors run what they hold, outside the sandbox; a folder symlink to a git repository outside the working directory counts as one, and the symlink itself is what was moved), so they were moved aside:")
		for _, m := range res.Quarantined {
			// Quoted: a created name can hold a newline or a bracket.
			fmt.Fprintf(&b, " %q to %q;", m.Path, m.To)
		}
		b.WriteString(" to create such a path, run the command again with \"sandbox\": false, which asks the user.]")
	}
	if res.GuardError != "" {
		fmt.Fprintf(&b, "\n[The sandbox could not finish its check for protected paths (.git, .vscode, .zed, .idea, .acp-agent) the command created: %s.]", res.GuardError)
	}
	return b.String()
}
